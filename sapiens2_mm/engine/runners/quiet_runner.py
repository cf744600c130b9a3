"""mmengine's Runner / FlexibleRunner with the start-up dumps in the log
file only and named upstream notices dropped.

``Runner.__init__`` logs the whole config and the system environment (the
torch build string among it) at INFO, to the console and the log file alike,
right after ``build_logger``; hooks run too late to change that, so the
logger is made quiet where it is built
(:func:`sapiens2_mm.utils.upstream_notices.quiet_logger`).

Both also build a visualizer of their own when the config names one that an
earlier run in the same process created (:func:`_fresh_visualizer_cfg`).
"""
from mmengine.registry import VISUALIZERS
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


def _fresh_visualizer_cfg(visualizer, experiment_name: str):
    """The visualizer config, renamed if its name is taken in this process.

    mmengine builds visualizers as process-wide named instances
    (``ManagerMixin.get_instance``): with the stock ``name='visualizer'`` of
    mmpose / mmseg configs, a second run in one process (``tools/train.py``'s
    ``main`` called twice, a notebook) gets the first run's visualizer, whose
    backends write the new run's scalars and images into the first run's log
    folder. A taken name is replaced by this run's experiment name.
    """
    if not isinstance(visualizer, dict) or 'name' not in visualizer:
        return visualizer
    vis_type = visualizer.get('type', 'Visualizer')
    if isinstance(vis_type, str):  # as ``build`` finds it: the default scope
        with VISUALIZERS.switch_scope_and_registry(None) as registry:
            vis_class = registry.get(vis_type)
    else:
        vis_class = vis_type
    if vis_class is not None and vis_class.check_instance_created(
            visualizer['name']):
        return dict(visualizer, name=experiment_name)
    return visualizer


@RUNNERS.register_module()
class Sapiens2Runner(Runner):
    """``mmengine.runner.Runner`` with a quiet console (module docstring)."""

    def build_logger(self, *args, **kwargs):
        return _quiet(super().build_logger(*args, **kwargs))

    def build_visualizer(self, visualizer=None):
        return super().build_visualizer(
            _fresh_visualizer_cfg(visualizer, self.experiment_name))


@RUNNERS.register_module()
class Sapiens2FlexibleRunner(FlexibleRunner):
    """``mmengine.runner.FlexibleRunner`` with a quiet console."""

    def build_logger(self, *args, **kwargs):
        return _quiet(super().build_logger(*args, **kwargs))

    def build_visualizer(self, visualizer=None):
        return super().build_visualizer(
            _fresh_visualizer_cfg(visualizer, self.experiment_name))
