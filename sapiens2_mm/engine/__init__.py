"""Optimizer-wrapper constructors and hooks."""
from .hooks import *  # noqa: F401,F403
from .optimizers import *  # noqa: F401,F403
