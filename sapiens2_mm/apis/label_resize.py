"""Bilinear resize of class logits to a large image, then argmax, in row tiles.

mmseg's ``postprocess_result`` resizes the (C, h, w) logits to the full image
before the argmax: (29, 6000, 8000) float32 is 5.6 GB for one 8000x6000 photo.
The same bilinear interpolation (PyTorch's ``align_corners`` rules) done for a
band of output rows at a time needs only the source rows of that band, so the
peak memory is one band (about ``tile_bytes``) plus the uint8 label map.
Label maps whose resized logits fit in one band (ordinary photos) take
PyTorch's interpolation directly.
"""
from typing import Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F


def _source_index(out_size: int, in_size: int, align_corners: bool,
                  device: torch.device
                  ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Lower/upper source index and weight of each output position.

    PyTorch's ``upsample_bilinear2d`` rule: ``src = (dst + 0.5) * in / out -
    0.5`` clamped at 0 (``align_corners=False``), ``src = dst * (in - 1) /
    (out - 1)`` otherwise.
    """
    dst = torch.arange(out_size, dtype=torch.float32, device=device)
    if align_corners:
        scale = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = dst * scale
    else:
        src = ((dst + 0.5) * (in_size / out_size) - 0.5).clamp(min=0)
    low = src.floor().long().clamp(max=in_size - 1)
    high = (low + 1).clamp(max=in_size - 1)
    return low, high, (src - low.float()).clamp(0, 1)


def label_dtype(num_classes: int) -> np.dtype:
    """The smallest unsigned dtype holding ``num_classes`` labels."""
    return np.dtype(np.uint8 if num_classes <= 256 else np.uint16)


def resize_argmax(logits: torch.Tensor, size: Tuple[int, int],
                  align_corners: bool = False,
                  threshold: Optional[float] = None,
                  tile_bytes: int = 64 << 20) -> np.ndarray:
    """Labels of ``logits`` bilinearly resized to ``size``, band by band.

    Args:
        logits: (C, h, w) class scores.
        size: output (H, W).
        align_corners: as the segmentor's (mmseg default False).
        threshold: one-channel (sigmoid) models: label 1 where
            ``sigmoid(logit) > threshold``, as mmseg does.
        tile_bytes: float32 bytes of one resized band (C x rows x W).

    Returns:
        (H, W) labels, uint8 (uint16 above 256 classes), equal to
        ``F.interpolate(logits[None], size, mode='bilinear').argmax(1)`` up to
        float rounding at exact ties.
    """
    num_classes, in_h, in_w = logits.shape
    out_h, out_w = (int(v) for v in size)
    if 4 * num_classes * out_h * out_w <= tile_bytes:
        # Fits in one band: PyTorch's own kernel on a classes-last tensor,
        # one pass over the output (2.4x faster than the gathers below).
        resized = F.interpolate(
            logits.float()[None].contiguous(memory_format=torch.channels_last),
            size=(out_h, out_w), mode='bilinear',
            align_corners=align_corners)[0].permute(1, 2, 0)
        return _labels(resized, threshold, num_classes)
    # Classes last: the column gathers then move whole class vectors and the
    # argmax reduces over contiguous memory (2-4x faster than over dim 0 of
    # (C, H, W); the arithmetic, hence every value, is the same).
    logits = logits.float().permute(1, 2, 0).contiguous()
    rows_low, rows_high, rows_w = _source_index(out_h, in_h, align_corners,
                                                logits.device)
    cols_low, cols_high, cols_w = _source_index(out_w, in_w, align_corners,
                                                logits.device)
    out = np.empty((out_h, out_w), label_dtype(max(num_classes, 2)))
    rows = max(1, tile_bytes // max(1, 4 * num_classes * out_w))
    wx = cols_w.view(1, -1, 1)
    for start in range(0, out_h, rows):
        stop = min(out_h, start + rows)
        wy = rows_w[start:stop].view(-1, 1, 1)
        band = logits.index_select(0, rows_low[start:stop]) * (1 - wy)
        band += logits.index_select(0, rows_high[start:stop]) * wy
        resized = band.index_select(1, cols_low) * (1 - wx)
        resized += band.index_select(1, cols_high) * wx
        out[start:stop] = _labels(resized, threshold, num_classes)
    return out


def _labels(resized: torch.Tensor, threshold: Optional[float],
            num_classes: int) -> np.ndarray:
    """(rows, W) labels of (rows, W, C) resized logits, in the label dtype."""
    if num_classes == 1:
        labels = resized[..., 0].sigmoid() > threshold
    else:
        labels = resized.argmax(-1)
    return labels.cpu().numpy().astype(label_dtype(max(num_classes, 2)))
