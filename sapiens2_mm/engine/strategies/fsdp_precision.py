"""Full precision for evaluation under FSDP mixed precision.

With ``mixed_precision=dict(param_dtype='bfloat16')`` (the bf16 snippet)
FSDP gathers bf16 parameters and casts the inputs to bf16 in every forward,
also for validation and ``tools/test.py``: evaluation then ran in bf16,
unasked (a tiny pose model's keypoints moved up to 108 px against the plain
fp32 test). torch's FSDP1 (2.x) evaluates a unit in eval mode with its full
precision parameters, and leaves the root's inputs uncast, when the unit's
``_use_full_prec_in_eval`` flag is set (its ``FSDP_USE_FULL_PREC_IN_EVAL``
environment variable sets it for every unit at wrapping time). The variable
cannot be used here: during training the pretraining EMA teacher runs in
eval mode inside a root in train mode, and would get fp32 parameters with
bf16 inputs. :func:`evaluate_in_full_precision` sets the flags only while
the wrapped model's ``val_step`` / ``test_step`` runs.
"""
from typing import Iterable

from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def _set_full_precision(units: Iterable[FSDP], enabled: bool) -> None:
    for unit in units:
        unit._use_full_prec_in_eval = enabled  # the root's input cast
        handle = getattr(unit, '_handle', None)
        if handle is not None:  # the unit's parameter gather
            handle._use_full_prec_in_eval = enabled


def evaluate_in_full_precision(model: nn.Module) -> nn.Module:
    """Make ``model`` (FSDP-wrapped, with ``val_step`` / ``test_step``)
    validate and test with full precision parameters and inputs."""
    units = [m for m in model.modules() if isinstance(m, FSDP)]
    for name in ('val_step', 'test_step'):
        step = getattr(model, name, None)
        if step is None:
            continue

        def in_full_precision(*args, _step=step, **kwargs):
            _set_full_precision(units, True)
            try:
                return _step(*args, **kwargs)
            finally:
                _set_full_precision(units, False)

        setattr(model, name, in_full_precision)
    return model
