"""Parameter shapes and names as they were before FSDP wrapping.

With ``use_orig_params=True`` FSDP keeps the parameter objects but turns each
into a 1-D view of this rank's shard (possibly empty), and inserts
``_fsdp_wrapped_module.`` / ``_checkpoint_wrapped_module.`` into the names. An
optimizer constructor that runs after wrapping (mmengine builds it on the
wrapped model) needs the original shape and name of each parameter:
:func:`record_full_shapes` tags every parameter before wrapping and
:func:`full_shape` / :func:`plain_name` read them back.
"""
from typing import Tuple

from torch import nn

from ..models.selfsup.teacher_ema import WRAPPER_NAMES

FULL_SHAPE_ATTR = '_sapiens2_full_shape'


def record_full_shapes(model: nn.Module) -> None:
    """Tag each parameter of ``model`` with its current (full) shape."""
    for param in model.parameters():
        setattr(param, FULL_SHAPE_ATTR, tuple(param.shape))


def full_shape(param: nn.Parameter) -> Tuple[int, ...]:
    """The shape ``param`` had before wrapping (its shape when untagged)."""
    return tuple(getattr(param, FULL_SHAPE_ATTR, param.shape))


def plain_name(name: str) -> str:
    """``name`` without the names wrappers insert."""
    for part in WRAPPER_NAMES:
        name = name.replace(part, '')
    return name
