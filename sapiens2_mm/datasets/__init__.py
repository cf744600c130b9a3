"""Datasets and their transforms, grouped by task."""
from .dense import *  # noqa: F401,F403
from .pose import *  # noqa: F401,F403
from .pretrain import *  # noqa: F401,F403
from .seg import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403
