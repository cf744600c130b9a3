"""Task heads. Importing this imports mmpose / mmseg (the backbone does not)."""
from .dense import *  # noqa: F401,F403
from .pose import *  # noqa: F401,F403
from .seg import *  # noqa: F401,F403
from .selfsup import *  # noqa: F401,F403
