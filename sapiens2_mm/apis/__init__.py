"""High-level inference APIs: build a task model, run it on images/videos.

>>> from sapiens2_mm.apis import init_model, build_inferencer
>>> model = init_model('configs/seg/...py', 'sapiens2_1b_seg.safetensors')
>>> results = build_inferencer(model)(['a.jpg', 'frames/'])
"""
from .base_inferencer import BaseInferencer, inference_pipeline
from .init_model import init_model, load_config, load_task_checkpoint
from .inputs import Frame, FrameReader, batched
from .person_boxes import BoxFile, DetectorBoxes, WholeImageBoxes
from .pose_inferencer import PoseInferencer
from .results import PoseResult, SegResult
from .seg_inferencer import SegInferencer
from .tasks import INFERENCERS, config_task, register_inferencer


def build_inferencer(model, task=None, **kwargs) -> BaseInferencer:
    """The inferencer of ``model``'s task (``INFERENCERS[task]``).

    Args:
        model: a model from :func:`init_model` (its ``task`` is used) or a
            config path, in which case ``checkpoint=`` / ``device=`` may be
            given in ``kwargs``.
        task: force a task name.
        **kwargs: inferencer arguments (batch_size, flip_test, boxes, ...).
    """
    if task is None:
        task = getattr(model, 'task', None)
        if task is None:
            task = config_task(load_config(model))
    if task not in INFERENCERS:
        raise ValueError(
            f'No inferencer for task {task!r}; available: '
            f'{sorted(INFERENCERS)} (normal/pointmap/albedo heads are not '
            'implemented in this package yet).')
    return INFERENCERS[task](model, **kwargs)


__all__ = [
    'BaseInferencer', 'inference_pipeline', 'init_model', 'load_config',
    'load_task_checkpoint', 'Frame', 'FrameReader', 'batched', 'BoxFile',
    'DetectorBoxes', 'WholeImageBoxes', 'PoseInferencer', 'PoseResult',
    'SegResult', 'SegInferencer', 'INFERENCERS', 'config_task',
    'register_inferencer', 'build_inferencer'
]
