"""Reading dense data samples (dicts or DenseDataSample) for the metrics.

mmengine's ``Evaluator`` hands metrics ``data_sample.to_dict()``: PixelData
fields arrive as ``{'data': tensor}`` and metainfo keys as plain values. Code
that calls a metric directly may pass ``DenseDataSample`` objects instead.
Both are read here, and every shape check names the sample.
"""
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from ....models.heads.dense.letterbox import (
    output_padding,
    smooth_for_enlargement,
)

#: How a prediction whose size differs from its ground truth is treated.
#: 'error': raise (the estimator returns predictions at the original size);
#: 'crop_padding': crop ``padding_size`` (left, right, top, bottom) of the
#: letterbox, then resize bilinearly to the GT size (mmseg's
#: ``DepthEstimator.postprocess_result`` rule); 'official': resize the whole
#: prediction, padding included, as the official evaluators do (only aligned
#: when the image already had the network's aspect ratio).
PRED_RESIZE_MODES = ('error', 'crop_padding', 'official')
#: The order of the task's own steps around the 'crop_padding' resize:
#: 'official' (the official demos: normals unit length and albedo clamped
#: before the resize, pointmaps blurred before an enlargement) or
#: 'resize_first' (only crop and resize; the metric's steps come after).
PRED_RESIZE_ORDERS = ('official', 'resize_first')


def sample_name(sample: Any) -> str:
    """``img_path`` of a sample, or a placeholder for messages."""
    path = read_meta(sample, 'img_path')
    return str(path) if path is not None else '<sample without img_path>'


def read_meta(sample: Any, key: str) -> Any:
    """A metainfo value (None when absent); tensors/arrays are kept."""
    if isinstance(sample, dict):
        return sample.get(key)
    return getattr(sample, key, None)


def read_pixels(sample: Any, key: str,
                required: bool = True) -> Optional[torch.Tensor]:
    """A PixelData field as a (C, H, W) tensor.

    Args:
        sample: dict from ``to_dict()`` or a ``DenseDataSample``.
        key: field name, e.g. ``'gt_normal'``.
        required: raise KeyError when missing (else return None).

    Returns:
        Tensor (C, H, W); a 2-D field is given a channel axis.
    """
    value = read_meta(sample, key)
    if isinstance(value, dict):
        value = value.get('data')
    elif value is not None and hasattr(value, 'data') and not isinstance(
            value, (torch.Tensor, np.ndarray)):
        value = value.data
    if value is None:
        if required:
            raise KeyError(
                f'{sample_name(sample)}: the data sample has no {key!r}; the '
                'metric needs it (PixelData (C, H, W) at the original size).')
        return None
    tensor = torch.as_tensor(value)
    if tensor.ndim == 2:
        tensor = tensor[None]
    if tensor.ndim != 3:
        raise ValueError(f'{sample_name(sample)}: {key} must be (C, H, W), '
                         f'got shape {tuple(tensor.shape)}.')
    return tensor


def read_mask(sample: Any, size: Tuple[int, int],
              key: str = 'gt_mask') -> torch.Tensor:
    """Valid-pixel mask (H, W) bool (``> 0``); all valid when absent.

    Raises:
        ValueError: the mask is not of the GT size ``size``.
    """
    mask = read_pixels(sample, key, required=False)
    if mask is None:
        return torch.ones(size, dtype=torch.bool)
    if mask.shape[0] != 1 or tuple(mask.shape[-2:]) != tuple(size):
        raise ValueError(
            f'{sample_name(sample)}: {key} has shape {tuple(mask.shape)} but '
            f'the ground truth is {tuple(size)}; give a (1, H, W) mask at the '
            'ground-truth size.')
    return mask[0] > 0


def match_size(pred: torch.Tensor, size: Tuple[int, int], sample: Any,
               mode: str, key: str,
               prepare: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
               smooth: bool = False) -> torch.Tensor:
    """Bring a (C, h, w) prediction to the GT size ``size`` following ``mode``.

    Args:
        pred: prediction (C, h, w).
        size: ground-truth (H, W).
        sample: the data sample (for ``padding_size`` and messages).
        mode: one of :data:`PRED_RESIZE_MODES`.
        key: field name, for messages.
        prepare: with ``'crop_padding'``, applied to the prediction before
            the crop and resize (the official demos' unit length / clamp).
        smooth: with ``'crop_padding'``, the official pointmap demo's blur
            before an enlargement.

    Returns:
        Tensor (C, H, W).
    """
    if tuple(pred.shape[-2:]) == tuple(size):
        return pred
    if mode == 'error':
        raise ValueError(
            f'{sample_name(sample)}: {key} is {tuple(pred.shape[-2:])} but '
            f'the ground truth is {tuple(size)}. Predictions must be at the '
            "original image size (letterbox removed); set pred_resize="
            "'crop_padding' to crop padding_size and resize here.")
    if mode == 'crop_padding':
        if prepare is not None:
            pred = prepare(pred)
        pad = read_meta(sample, 'padding_size')
        if pad is not None:
            # padding of the network input; a smaller prediction (the 4K
            # heads: half) crops it in its own pixels
            net = read_meta(sample, 'img_shape')
            net = pred.shape[-2:] if net is None else tuple(
                int(v) for v in net)[:2]
            left, right, top, bottom = output_padding(pad, net,
                                                      pred.shape[-2:])
            h, w = pred.shape[-2:]
            if left + right >= w or top + bottom >= h:
                raise ValueError(
                    f'{sample_name(sample)}: padding_size {tuple(pad)} leaves '
                    f'nothing of the {h}x{w} prediction {key}.')
            pred = pred[:, top:h - bottom, left:w - right]
    elif mode != 'official':
        raise ValueError(f'pred_resize must be one of {PRED_RESIZE_MODES}, '
                         f'got {mode!r}.')
    if tuple(pred.shape[-2:]) == tuple(size):
        return pred
    dtype = pred.dtype if pred.is_floating_point() else torch.float32
    pred = pred[None].to(dtype)
    if smooth and mode == 'crop_padding':
        pred = smooth_for_enlargement(pred, size)
    return F.interpolate(pred, size=tuple(size), mode='bilinear',
                         align_corners=False, antialias=False)[0]


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """Raise a ValueError naming the option when ``value`` is not allowed."""
    if value not in choices:
        raise ValueError(f'{name} must be one of {tuple(choices)}, '
                         f'got {value!r}.')


def as_compute_dtype(tensor: torch.Tensor) -> torch.Tensor:
    """float32 for half/bf16/integer inputs, float64 kept (CPU-friendly)."""
    if tensor.dtype in (torch.float32, torch.float64):
        return tensor
    return tensor.float()
