"""mmengine's Runner / FlexibleRunner with the start-up dumps in the log
file only and named upstream notices dropped.

``Runner.__init__`` logs the whole config and the system environment (the
torch build string among it) at INFO, to the console and the log file alike,
right after ``build_logger``; hooks run too late to change that, so the
logger is made quiet where it is built
(:func:`sapiens2_mm.utils.upstream_notices.quiet_logger`).
"""
from mmengine.runner import FlexibleRunner, Runner

from ...registry import RUNNERS
from ...utils.upstream_notices import (
    log_file_of,
    quiet_logger,
    silence_upstream_warnings,
)


def _quiet(logger):
    silence_upstream_warnings()
    quiet_logger(logger)
    path = log_file_of(logger)
    if path:
        logger.info(f'The config and the system environment are written to '
                    f'{path} (not shown here).')
    return logger


@RUNNERS.register_module()
class Sapiens2Runner(Runner):
    """``mmengine.runner.Runner`` with a quiet console (module docstring)."""

    def build_logger(self, *args, **kwargs):
        return _quiet(super().build_logger(*args, **kwargs))


@RUNNERS.register_module()
class Sapiens2FlexibleRunner(FlexibleRunner):
    """``mmengine.runner.FlexibleRunner`` with a quiet console."""

    def build_logger(self, *args, **kwargs):
        return _quiet(super().build_logger(*args, **kwargs))
