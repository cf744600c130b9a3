"""How a built model runs: the device check, the inference dtype and
``torch.compile`` (``--device``, ``--dtype``, ``--compile``).

Below both ``apis`` (inferencers, ``init_model``) and ``engine``
(``InferenceSpeedHook``), which apply the same options; imports only torch.
"""
from .compilation import (
                          COMPILED_PARTS,
                          CompileFallbackWarning,
                          compile_model,
                          compiler_problem,
                          is_compiled,
)
from .devices import check_device
from .precision import DTYPES, autocast, bf16_problem, check_dtype, set_inference_dtype
from .speedups import apply_speedups

__all__ = [
    'COMPILED_PARTS', 'CompileFallbackWarning', 'compile_model',
    'compiler_problem', 'is_compiled', 'check_device', 'DTYPES', 'autocast',
    'bf16_problem', 'check_dtype', 'set_inference_dtype', 'apply_speedups'
]
