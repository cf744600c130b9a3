"""Registered task descriptions (``sapiens2_mm.registry.TASKS``).

One module per task family, each registering :class:`BaseTask` subclasses; a
new task adds its module here (docs/inference.md, "Adding a task"). The dense
tasks normal and albedo are their declared maps plus a few lines in
``dense.py`` (docs/dense.md, "Adding a dense task").
"""
from .base import (
    BaseTask,
    find_task,
    get_task,
    task_names,
    visualization_hooks,
)
from .dense import AlbedoTask, DenseOptions, DenseTask, NormalTask
from .options import TaskOptions, option
from .pointmap import PointmapTask
from .pose import PoseOptions, PoseTask
from .seg import SegOptions, SegTask

__all__ = [
    'BaseTask', 'find_task', 'get_task', 'task_names',
    'visualization_hooks', 'PoseTask', 'SegTask', 'DenseTask', 'NormalTask',
    'PointmapTask', 'AlbedoTask', 'TaskOptions', 'option', 'PoseOptions',
    'SegOptions', 'DenseOptions'
]
