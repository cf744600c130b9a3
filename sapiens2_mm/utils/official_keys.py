"""Key layout of official Sapiens2 files vs this package's models.

Official task checkpoints name their parts ``backbone.`` and ``decode_head.``.
A model may call them otherwise (mmpose's ``TopdownPoseEstimator`` calls its
head ``head.``); everything else is identical, so conversion is a prefix
rename per task. The renames and head markers of each task are part of its
registered description (``official_renames`` / ``checkpoint_marker`` of
:class:`sapiens2_mm.apis.tasks.BaseTask`); the table below only recognises the
official release's files of tasks without a registered description.
"""
from typing import Dict, Mapping

import torch

TASKS = ('pretrain', 'pose', 'seg', 'normal', 'pointmap', 'albedo')

# A key only one task's head has, to recognise an official file's task.
_TASK_MARKERS = {
    'pose': 'conv_pose.weight',
    'seg': 'conv_seg.weight',
    'normal': 'conv_normal.weight',
    'pointmap': 'conv_pointmap.weight',
    'albedo': 'conv_albedo.weight',
}


def _registered_tasks() -> dict:
    """name -> description of every registered task (imported lazily: the
    descriptions live in ``sapiens2_mm.apis``, which imports this module)."""
    from ..apis.tasks import get_task, task_names
    return {name: get_task(name) for name in task_names()}


def _markers() -> Dict[str, str]:
    markers = {name: spec.checkpoint_marker
               for name, spec in _registered_tasks().items()
               if spec.checkpoint_marker}
    for task, marker in _TASK_MARKERS.items():
        markers.setdefault(task, marker)
    return markers


def _renames(task: str) -> Dict[str, str]:
    spec = _registered_tasks().get(task)
    return dict(spec.official_renames) if spec is not None else {}


def detect_task(state_dict: Mapping[str, torch.Tensor]) -> str:
    """Guess the task of an official or converted state dict.

    Returns:
        one of :data:`TASKS` or a registered task; ``'pretrain'`` for bare
        backbone keys.

    Raises:
        ValueError: the keys match no known layout.
    """
    for task, marker in _markers().items():
        if any(key.endswith(marker) for key in state_dict):
            return task
    if 'cls_token' in state_dict or 'backbone.cls_token' in state_dict:
        return 'pretrain'
    sample = ', '.join(list(state_dict)[:5])
    raise ValueError(
        f'Cannot tell the Sapiens2 task of a checkpoint with keys {sample}, ...; '
        f'pass the task explicitly (one of {TASKS}).')


def _check_task(task: str) -> None:
    if task not in TASKS and task not in _registered_tasks():
        raise ValueError(f'Unknown task {task!r}; expected one of {TASKS}.')


def _rename(state_dict, renames):
    out = {}
    for key, value in state_dict.items():
        for old, new in renames.items():
            if key.startswith(old):
                key = new + key[len(old):]
                break
        out[key] = value
    return out


def official_to_package(state_dict: Mapping[str, torch.Tensor],
                        task: str) -> Dict[str, torch.Tensor]:
    """Rename official keys to this package's model keys for ``task``."""
    _check_task(task)
    return _rename(state_dict, _renames(task))


def package_to_official(state_dict: Mapping[str, torch.Tensor],
                        task: str) -> Dict[str, torch.Tensor]:
    """Inverse of :func:`official_to_package`."""
    _check_task(task)
    inverse = {new: old for old, new in _renames(task).items()}
    return _rename(state_dict, inverse)
