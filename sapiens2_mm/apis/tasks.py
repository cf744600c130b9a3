"""Which task a config builds, and the table of per-task inferencers.

Every task plugs into the inference API through one entry of
:data:`INFERENCERS` (task name -> inferencer class); ``tools/infer.py`` and
:func:`build_inferencer` only look there. Pose and seg are implemented; the
normal / pointmap / albedo heads are not part of this package yet, so they have
no entry and ask for a clear error instead.
"""
from typing import Dict, Type

from mmengine.config import Config

# Model type -> task, for the estimator wrappers the task configs use.
_MODEL_TASKS = {
    'mmpose.TopdownPoseEstimator': 'pose',
    'TopdownPoseEstimator': 'pose',
}
# decode_head type -> task, for mmseg EncoderDecoder-style configs.
_HEAD_TASKS = {'SegHead': 'seg'}

INFERENCERS: Dict[str, Type] = {}


def register_inferencer(task: str):
    """Class decorator adding an inferencer to :data:`INFERENCERS`."""
    def _add(cls):
        INFERENCERS[task] = cls
        return cls
    return _add


def config_task(cfg: Config) -> str:
    """The task of a model config ('pose', 'seg', ...).

    Raises:
        ValueError: the model type is not one this package can run.
    """
    model = cfg.get('model')
    if model is None:
        raise ValueError('The config has no `model` entry; pass a task config '
                         'from configs/pose or configs/seg.')
    mtype = model.get('type')
    if mtype in _MODEL_TASKS:
        return _MODEL_TASKS[mtype]
    head = model.get('decode_head') or {}
    if head.get('type') in _HEAD_TASKS:
        return _HEAD_TASKS[head['type']]
    raise ValueError(
        f'Cannot run inference for model type {mtype!r} with decode head '
        f'{head.get("type")!r}: supported are {sorted(_MODEL_TASKS)} (pose) and '
        f'decode heads {sorted(_HEAD_TASKS)} (seg).')
