"""Metrics, grouped by task, and the predictions dump of tools/test.py."""
from .dense import *  # noqa: F401,F403
from .dump_results import AtomicDumpResults  # noqa: F401
from .pose import *  # noqa: F401,F403
from .seg import *  # noqa: F401,F403
