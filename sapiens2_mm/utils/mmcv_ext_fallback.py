"""Let mmpose, mmseg and mmdet run on mmcv-lite (no compiled ``mmcv._ext``).

``mmcv.ops`` modules load the compiled extension when they are imported, so with
mmcv-lite ``import mmpose.models`` or ``import mmseg.models`` fails even though the
models they hold never call a compiled op. We register a stand-in ``mmcv._ext``
module, only when mmcv is installed without that module (mmcv-lite):

* ``nms`` and ``roi_align_forward`` are served by torchvision, which ships the same
  kernels, so detectors (mmdet RTMDet person detection in the pose demo) work.
* every other op is a function that raises :class:`MissingCompiledOpError` naming
  the op and how to install full mmcv, at call time instead of at import time.

With full mmcv installed nothing is patched. A full mmcv whose compiled
extension exists but fails to load (built for another torch, missing CUDA
libraries) is reported once with its own error and left alone: the stand-in
would hide the real fault behind "mmcv-lite does not include".
"""
import importlib
import importlib.machinery
import importlib.util
import logging
import sys
import types
import warnings

import torch

_MODULE_NAME = 'mmcv._ext'
# Versions that mmpose 1.3 and mmseg 1.2 accept (full mmcv or mmcv-lite).
MMCV_RANGE = '>=2.0.0,<2.2.0'
MMCV_MISSING_HINT = (
    f'sapiens2_mm needs mmcv{MMCV_RANGE}, either full mmcv or mmcv-lite. '
    'setup.py does not install it, so that an existing full mmcv is kept: '
    'run `pip install "mmcv-lite==2.1.0"` (or `pip install -e ".[mmcv-lite]"`), '
    'or build full mmcv (README section "Full mmcv").')
logger = logging.getLogger(__name__)
_reported = set()
INSTALL_HINT = (
    'Install full mmcv built for your torch (see the README section "Full mmcv"), '
    'or use a model that does not need this op.')


class MissingCompiledOpError(RuntimeError):
    """Raised when an mmcv op needs compiled code that mmcv-lite lacks."""


def _missing_op(name: str):

    def op(*args, **kwargs):
        raise MissingCompiledOpError(
            f'mmcv op "{name}" needs the compiled extension mmcv._ext, which '
            f'mmcv-lite does not include. {INSTALL_HINT}')

    op.__name__ = name
    return op


def _nms(bboxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float,
         offset: int = 0) -> torch.Tensor:
    """mmcv's ``ext_module.nms`` contract served by torchvision.

    Args:
        bboxes: (N, 4) boxes x1, y1, x2, y2.
        scores: (N,) scores.
        iou_threshold: IoU above which the lower-scored box is dropped.
        offset: 0 or 1; mmcv's legacy ``offset=1`` counts box widths as
            ``x2 - x1 + 1``, which equals widening each box by one pixel.

    Returns:
        (M,) int64 indices of kept boxes, highest score first.
    """
    from torchvision.ops import nms
    if offset not in (0, 1):
        raise ValueError(f'nms offset must be 0 or 1, got {offset}')
    if offset == 1:
        bboxes = bboxes.clone()
        bboxes[:, 2:] += 1
    return nms(bboxes.float(), scores.float(), float(iou_threshold))


def _roi_align_forward(features, rois, output, argmax_y, argmax_x, aligned_height,
                       aligned_width, spatial_scale, sampling_ratio, pool_mode,
                       aligned):
    """mmcv's in-place ``roi_align_forward`` for average pooling via torchvision."""
    from torchvision.ops import roi_align
    if pool_mode != 1:
        raise MissingCompiledOpError(
            'mmcv RoIAlign with pool_mode="max" needs the compiled mmcv._ext; '
            f'only pool_mode="avg" runs on mmcv-lite. {INSTALL_HINT}')
    output.copy_(
        roi_align(features, rois, (aligned_height, aligned_width), spatial_scale,
                  sampling_ratio, aligned))


_SERVED_BY_TORCHVISION = {'nms': _nms, 'roi_align_forward': _roi_align_forward}


class _ExtStandIn(types.ModuleType):
    """A module whose every public attribute is an op (real or raising)."""

    def __getattr__(self, name: str):
        # Dunder lookups (``__file__``, ``__path__``, pickling, inspect) must fail
        # normally, or importlib and tools treat this as a package.
        if name.startswith('__') and name.endswith('__'):
            raise AttributeError(name)
        op = _SERVED_BY_TORCHVISION.get(name) or _missing_op(name)
        setattr(self, name, op)
        return op


def mmcv_installed() -> bool:
    """Whether any mmcv (full or lite) is importable."""
    return importlib.util.find_spec('mmcv') is not None


def require_mmcv() -> None:
    """Raise a clear ImportError when no mmcv is installed.

    Raises:
        ImportError: neither full mmcv nor mmcv-lite is installed.
    """
    if not mmcv_installed():
        raise ImportError(MMCV_MISSING_HINT)


def _report_once(key: str, log, message: str) -> None:
    if key not in _reported:
        _reported.add(key)
        log(message)


def install_mmcv_ext_fallback() -> bool:
    """Register the stand-in ``mmcv._ext`` if mmcv ships without it (mmcv-lite).

    The stand-in is installed only when the module is absent. A compiled
    extension that exists but fails to import is reported once (a warning with
    the original error) and not replaced.

    Returns:
        True if the stand-in is (now) in use, False if real mmcv ops exist,
        the compiled extension is broken, or mmcv is not installed at all.
    """
    if isinstance(sys.modules.get(_MODULE_NAME), _ExtStandIn):
        return True
    if not mmcv_installed():
        return False
    try:  # find_spec of a submodule imports mmcv itself
        ext_spec = importlib.util.find_spec(_MODULE_NAME)
        if ext_spec is not None:
            importlib.import_module(_MODULE_NAME)
    except Exception as error:  # a broken mmcv or mmcv._ext build
        _report_once(
            'broken', lambda m: warnings.warn(m, RuntimeWarning, stacklevel=3),
            'mmcv is installed but fails to import its compiled extension '
            f'mmcv._ext: {type(error).__name__}: {error}. Rebuild mmcv against '
            f'torch {torch.__version__} or install mmcv-lite; sapiens2_mm '
            'leaves it alone.')
        return False
    if ext_spec is not None:
        return False
    module = _ExtStandIn(_MODULE_NAME, 'sapiens2_mm stand-in for mmcv._ext')
    module.__spec__ = importlib.machinery.ModuleSpec(
        _MODULE_NAME, loader=None, origin='sapiens2_mm')
    sys.modules[_MODULE_NAME] = module
    _report_once(
        'installed', logger.info,
        'mmcv has no compiled mmcv._ext (mmcv-lite): sapiens2_mm serves nms '
        'and roi_align through torchvision; other compiled ops raise '
        'MissingCompiledOpError when called.')
    return True
