"""``--dtype {fp32,bf16}``: the numeric precision of inference.

fp32 is the default and the official numerics. bf16 runs the network under
``torch.autocast(dtype=torch.bfloat16)`` (matmuls and convolutions in bf16,
norms and softmax in fp32, as autocast decides); the RoPE tables keep their
own bf16 numerics either way. Its cost in accuracy is printed by
``tools/analysis_tools/benchmark_inference.py`` (relative L2 of the outputs,
keypoint shift in pixels).
"""
import contextlib
from typing import Union

import torch

from ..utils.user_errors import OptionError

DTYPES = {'fp32': torch.float32, 'bf16': torch.bfloat16}


def bf16_problem(device: Union[str, torch.device]) -> Union[str, None]:
    """Why ``device`` cannot run bf16 natively, or ``None`` if it can.

    CUDA needs compute capability >= 8.0 (Ampere); a CPU needs bf16
    instructions (AVX512-BF16 or AMX), without which torch emulates bf16 and
    runs slower than fp32; MPS needs macOS 14.
    """
    dev = torch.device(device)
    if dev.type == 'cuda':
        if not torch.cuda.is_bf16_supported(including_emulation=False):
            name = torch.cuda.get_device_name(dev)
            return (f'the GPU {name!r} has no bf16 support (needs compute '
                    'capability >= 8.0)')
        return None
    if dev.type == 'cpu':
        if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return ('this CPU has no bf16 instructions (AVX512-BF16 / AMX); '
                    'bf16 would be emulated and slower than fp32')
        return None
    if dev.type == 'mps':
        if not torch.backends.mps.is_macos_or_newer(14, 0):
            return 'MPS supports bf16 from macOS 14 on'
        return None
    return f'bf16 is not checked on device type {dev.type!r}'


def check_dtype(dtype: str, device: Union[str, torch.device] = 'cpu',
                allow_emulated: bool = False) -> torch.dtype:
    """The torch dtype of a ``--dtype`` value, if ``device`` supports it.

    Args:
        dtype: ``'fp32'`` or ``'bf16'``.
        device: where the model runs.
        allow_emulated: accept bf16 on a CPU without bf16 instructions
            (benchmarks measuring that case).

    Raises:
        ValueError: an unknown value, or bf16 on a device without bf16
            support (saying why and what to use instead).
    """
    if dtype not in DTYPES:
        raise OptionError(f'--dtype must be one of {sorted(DTYPES)}, got '
                         f'{dtype!r}.')
    if dtype == 'bf16':
        problem = bf16_problem(device)
        emulated_cpu = torch.device(device).type == 'cpu'
        if problem is not None and not (allow_emulated and emulated_cpu):
            raise OptionError(
                f'--dtype bf16 on {str(device)!r}: {problem}. Use --dtype fp32 '
                '(the default) on this device.')
    return DTYPES[dtype]


def autocast(dtype: Union[str, torch.dtype],
             device: Union[str, torch.device] = 'cpu'):
    """A context running the network in ``dtype`` (nothing for fp32)."""
    if isinstance(dtype, str):
        dtype = DTYPES[dtype]
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def _to_fp32(value):
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_to_fp32(v) for v in value)
    return value


class _AutocastForward:
    """A module forward run under autocast, its float outputs back in fp32
    (so decoding, resizing and numpy conversion see fp32 as before)."""

    def __init__(self, forward, dtype: torch.dtype, device_type: str) -> None:
        self.eager = forward
        self.dtype, self.device_type = dtype, device_type

    def __call__(self, *args, **kwargs):
        with torch.autocast(device_type=self.device_type, dtype=self.dtype):
            out = self.eager(*args, **kwargs)
        return _to_fp32(out)


def set_inference_dtype(model: torch.nn.Module, dtype: str = 'fp32',
                        allow_emulated: bool = False) -> torch.dtype:
    """Run the backbone / neck / head of ``model`` in ``dtype`` from now on.

    The forwards of the parts named in
    :data:`~sapiens2_mm.runtime.compilation.COMPILED_PARTS` (or of a bare network)
    run under autocast; their outputs are returned as fp32. fp32 leaves the
    model as it is.

    Raises:
        ValueError: see :func:`check_dtype`.
    """
    from .compilation import COMPILED_PARTS
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device('cpu')
    torch_dtype = check_dtype(dtype, device, allow_emulated)
    if torch_dtype == torch.float32:
        return torch_dtype
    parts = [getattr(model, name) for name in COMPILED_PARTS
             if isinstance(getattr(model, name, None), torch.nn.Module)]
    for module in parts or [model]:
        if not isinstance(module.forward, _AutocastForward):
            module.forward = _AutocastForward(module.forward, torch_dtype,
                                              device.type)
    model.inference_dtype = dtype
    return torch_dtype
