"""Pick the inferencer of a model's task (through the task registry)."""
from .base_inferencer import BaseInferencer
from .init_model import load_config
from .tasks import find_task, get_task


def build_inferencer(model, task=None, **kwargs) -> BaseInferencer:
    """The inferencer of ``model``'s task (its registered description).

    Args:
        model: a model from :func:`init_model` (its ``task`` is used) or a
            config path, in which case ``checkpoint=`` / ``device=`` may be
            given in ``kwargs``.
        task: force a task name.
        **kwargs: inferencer arguments (batch_size, flip_test, boxes, ...).

    Raises:
        ValueError: the task is not registered (registered names listed).
    """
    if task is None:
        task = getattr(model, 'task', None)
    spec = find_task(load_config(model)) if task is None else get_task(task)
    return spec.build_inferencer(model, **kwargs)
