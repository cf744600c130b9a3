"""Pick the inferencer of a model's task."""
from .base_inferencer import BaseInferencer
from .init_model import load_config
from .tasks import INFERENCERS, config_task


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
