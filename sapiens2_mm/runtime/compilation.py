"""``torch.compile`` of a task model's network for inference.

:func:`compile_model` compiles the ``forward`` of the backbone, the neck and
the head of a task model in place (mmpose ``TopdownPoseEstimator``, mmseg
``EncoderDecoder`` and this package's dense estimators alike), leaving the
pre-/post-processing (data preprocessor, flip averaging, heatmap decoding,
resizing) eager. Parameter names do not change (no ``_orig_mod.`` prefix), so
checkpoints load before or after compiling.

* The backbone forward compiles into one graph (no graph breaks). Inductor
  keeps bf16 intermediates in fp32 unless told otherwise, which would drop
  the bf16 rounding of the RoPE tables and of q/k (6.9e-5 off the official
  vectors, measured); ``emulate_precision_casts`` keeps every cast, so the
  compiled backbone matches the official vectors to 1e-5.
* The batch dimension of every tensor input is marked dynamic, so one graph
  serves every batch size from 2 up; a batch of 1 gets one graph of its own
  (torch specialises size-1 dimensions). The image size stays static.
* Where no compiler is available (inductor on CPU needs a C++ compiler,
  on CUDA Triton), or compiling fails on the first batch, the model runs
  eager and one warning says why.
"""
import functools
import warnings
from typing import Callable, List, Optional, Union

import torch
from torch import nn

#: Sub-modules of a task model whose forward is compiled, in call order.
COMPILED_PARTS = ('backbone', 'neck', 'head', 'decode_head')


class CompileFallbackWarning(UserWarning):
    """``compile=True`` could not compile; the model runs eager."""


def _device_type(model: nn.Module) -> str:
    param = next(model.parameters(), None)
    return param.device.type if param is not None else 'cpu'


def compiler_problem(device_type: str = 'cpu',
                     backend: str = 'inductor') -> Optional[str]:
    """Why ``torch.compile`` cannot work here, or ``None`` if it can.

    Inductor needs a working C++ compiler for CPU code (searched as
    ``torch._inductor.config.cpp.cxx`` says, e.g. ``g++``) and Triton for
    CUDA code. Other backends are not checked.
    """
    if backend != 'inductor':
        return None
    if device_type == 'cuda':
        from torch.utils._triton import has_triton
        if not has_triton():
            return ('inductor needs Triton for CUDA code and it is not '
                    'installed (pip install triton)')
        return None
    try:
        from torch._inductor import cpp_builder
        cpp_builder.cpp_compiler_search.cache_clear()
        cpp_builder.get_cpp_compiler()
    except Exception as err:  # noqa: BLE001 - any failure means "no compiler"
        return (f'inductor needs a C++ compiler for CPU code and none works '
                f'({type(err).__name__}: {err}); install g++ (e.g. apt-get '
                'install g++) or set CXX')
    return None


def _warn_fallback(reason: str) -> None:
    warnings.warn(
        f'--compile / compile=True: {reason}. Running eager (same outputs, '
        'not faster).', CompileFallbackWarning, stacklevel=3)


class _CompiledForward:
    """A module's forward compiled, with the batch dim of every tensor input
    marked dynamic and an eager fallback if compiling fails."""

    def __init__(self, forward: Callable, state: dict, **options) -> None:
        self.eager = forward
        self.compiled = torch.compile(forward, **options)
        self.state = state
        functools.update_wrapper(self, forward)

    def __call__(self, *args, **kwargs):
        if self.state['failed']:
            return self.eager(*args, **kwargs)
        for value in args:
            _mark_batch_dynamic(value)
        try:
            return self.compiled(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - backend failure -> eager
            from torch._dynamo.exc import BackendCompilerFailed
            if not isinstance(err, BackendCompilerFailed):
                raise
            self.state['failed'] = True
            _warn_fallback(f'compiling failed ({type(err).__name__}: '
                           f'{str(err).splitlines()[0][:200]})')
            return self.eager(*args, **kwargs)


def _mark_batch_dynamic(value) -> None:
    if isinstance(value, torch.Tensor):
        if value.dim() and value.shape[0] > 1:
            torch._dynamo.maybe_mark_dynamic(value, 0)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _mark_batch_dynamic(item)


def compile_model(model: nn.Module, enabled: bool = True,
                  backend: str = 'inductor', mode: Optional[str] = None,
                  parts: Union[tuple, List[str]] = COMPILED_PARTS
                  ) -> List[str]:
    """Compile the backbone / neck / head forwards of ``model`` in place.

    Args:
        model: a task model (e.g. from :func:`~sapiens2_mm.apis.init_model`)
            or a bare backbone (then its own forward is compiled).
        enabled: ``False`` does nothing (convenience for CLI flags).
        backend / mode: passed to ``torch.compile``.
        parts: attribute names of the sub-modules to compile.

    Returns:
        The names of the compiled parts (empty when compiling is impossible
        here; a :class:`CompileFallbackWarning` then says why).
    """
    if not enabled:
        return []
    problem = compiler_problem(_device_type(model), backend)
    if problem is not None:
        _warn_fallback(problem)
        return []
    targets = [(name, getattr(model, name)) for name in parts
               if isinstance(getattr(model, name, None), nn.Module)]
    if not targets:  # a bare network
        targets = [(type(model).__name__, model)]
    state = dict(failed=False)  # one warning for all parts
    options = dict(backend=backend, dynamic=None)
    if backend == 'inductor':
        # torch.compile takes a mode or options, not both: spell the mode
        # out as its options and add the precision casts.
        from torch._inductor import list_mode_options
        options['options'] = dict(list_mode_options(mode) if mode else {},
                                  emulate_precision_casts=True)
    else:
        options['mode'] = mode
    for _, module in targets:
        if isinstance(module.forward, _CompiledForward):
            continue
        module.forward = _CompiledForward(module.forward, state, **options)
    model.compiled_parts = [name for name, _ in targets]
    return model.compiled_parts


def is_compiled(model: nn.Module) -> bool:
    """Whether :func:`compile_model` compiled parts of ``model``."""
    return bool(getattr(model, 'compiled_parts', None))
