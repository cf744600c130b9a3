"""Full precision for evaluation under FSDP mixed precision.

With ``mixed_precision=dict(param_dtype='bfloat16')`` (the bf16 snippet)
FSDP gathers bf16 parameters and casts the inputs to bf16 in every forward,
also for validation and ``tools/test.py``: evaluation then ran in bf16,
unasked (a tiny pose model's keypoints moved up to 56 px against the plain
fp32 test). torch's FSDP1 evaluates modules in eval mode with the full
precision parameters and inputs when the environment variable
``FSDP_USE_FULL_PREC_IN_EVAL`` is ``'1'`` at wrapping time (read by each
FSDP unit's constructor); :func:`set_full_precision_eval` sets it just before
:class:`Sapiens2FSDPStrategy` wraps the model. Training is unaffected.
"""
import os

FULL_PREC_IN_EVAL = 'FSDP_USE_FULL_PREC_IN_EVAL'  # torch's name (_flat_param)


def set_full_precision_eval(enabled: bool) -> None:
    """Make the FSDP units wrapped from now on evaluate in full precision
    (``enabled``) or in their mixed-precision parameter dtype."""
    os.environ[FULL_PREC_IN_EVAL] = '1' if enabled else '0'
