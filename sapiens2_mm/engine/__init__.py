"""Optimizer-wrapper constructors, hooks, runners and training strategies."""
from .hooks import *  # noqa: F401,F403
from .optimizers import *  # noqa: F401,F403
from .runners import *  # noqa: F401,F403
from .strategies import *  # noqa: F401,F403
