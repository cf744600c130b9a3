"""One entry point for the inference speed options (``--compile``,
``--dtype``) used by ``init_model``, the inferencers and the tools."""
from torch import nn

from .compilation import compile_model
from .precision import check_dtype, set_inference_dtype


def apply_speedups(model: nn.Module, compile: bool = False,
                   dtype: str = 'fp32', allow_emulated: bool = False) -> None:
    """Compile (when asked) and set the inference dtype of ``model``.

    The dtype is checked first, so a device without bf16 fails before any
    compiling. Autocast wraps the compiled forwards (it is part of the
    state torch.compile guards on).

    Raises:
        ValueError: an unknown dtype or bf16 on a device without it.
    """
    param = next(model.parameters(), None)
    check_dtype(dtype, param.device if param is not None else 'cpu',
                allow_emulated)
    if compile:
        compile_model(model)
    set_inference_dtype(model, dtype, allow_emulated)
