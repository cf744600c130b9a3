"""The inferencer of a model's task: the Python API's entry point.

>>> from sapiens2_mm.apis import build_inferencer, init_model
>>> inferencer = build_inferencer(init_model(config, checkpoint))
>>> results = inferencer(['a.jpg', 'frames/'])

This module sits above the task descriptions (:mod:`~sapiens2_mm.apis.
tasks`) and :func:`~sapiens2_mm.apis.init_model`: it reads the task that
``init_model`` worked out (``model.task``) and asks its description for the
inferencer; a task whose inferencer runs a second model (dense ``fg_seg``)
gets :func:`init_model` to load it.
"""
from typing import Optional, Union

from torch import nn

from ..utils.config_file import ConfigType
from .base_inferencer import BaseInferencer
from .init_model import init_model
from .tasks import get_task

#: The arguments of :func:`init_model` that build_inferencer takes with a
#: config.
MODEL_ARGUMENTS = ('checkpoint', 'device', 'compile', 'dtype')


def build_inferencer(model: Union[nn.Module, ConfigType],
                     task: Optional[str] = None, **kwargs) -> BaseInferencer:
    """The inferencer of ``model``'s task (its registered description).

    Args:
        model: a model from :func:`init_model` (its ``task`` is used), or a
            config path / ``Config``, built with :func:`init_model` (with
            the ``checkpoint``, ``device``, ``compile`` and ``dtype`` given
            in ``kwargs``).
        task: force a task name (the inferencer refuses a model of another
            task).
        **kwargs: inferencer arguments (batch_size, flip_test, boxes, ...);
            a dense ``fg_seg`` may be a ``(config, checkpoint)`` pair.

    Raises:
        ValueError: the task is not registered (registered names listed).
    """
    if not isinstance(model, nn.Module):
        model = init_model(model, **{k: kwargs.pop(k) for k in
                                     MODEL_ARGUMENTS if k in kwargs})
    spec = get_task(task or model.task)
    return spec.build_inferencer(model, load_model=init_model, **kwargs)
