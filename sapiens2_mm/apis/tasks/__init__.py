"""Registered task descriptions (``sapiens2_mm.registry.TASKS``).

One module per task, each registering one :class:`BaseTask` subclass; a new
task adds its module here (docs/inference.md, "Adding a task").
"""
from .albedo import AlbedoTask
from .base import (
    BaseTask,
    config_task,
    find_task,
    get_task,
    task_names,
    visualization_hooks,
)
from .normal import NormalTask
from .pointmap import PointmapTask
from .pose import PoseTask
from .seg import SegTask

__all__ = [
    'BaseTask', 'config_task', 'find_task', 'get_task', 'task_names',
    'visualization_hooks', 'PoseTask', 'SegTask', 'NormalTask', 'PointmapTask',
    'AlbedoTask'
]
