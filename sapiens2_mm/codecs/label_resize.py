"""Bilinear resize of class logits to a large image, then argmax, in row tiles.

The one "resize logits, then argmax" of the package: the seg inferencer's
label maps and :class:`~sapiens2_mm.evaluation.SegIoUMetric`'s predictions.
It sits with the codecs (the pose heatmap decoding is there too): below
``apis`` and ``evaluation``, which both use it.

mmseg's ``postprocess_result`` resizes the (C, h, w) logits to the full image
before the argmax: (29, 6000, 8000) float32 is 5.6 GB for one 8000x6000 photo.
The same bilinear interpolation (PyTorch's ``align_corners`` rules) done for a
band of output rows at a time needs only the source rows of that band, so the
peak memory is one band (about ``tile_bytes``) plus the uint8 label map.
Label maps whose resized logits fit in one band (ordinary photos) take
PyTorch's interpolation directly.

Before either, the label map is looked up where it cannot change
(:mod:`~sapiens2_mm.codecs.uniform_cells`): only pixels of cells whose corners
disagree (region boundaries) are interpolated, which is what makes a trained
model's label map of a 12 MP photo about 10x cheaper. Score maps that are
mostly boundaries (random weights) take the dense paths.
"""
from typing import Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from .uniform_cells import (
    first_argmax_top2,
    interpolate_at,
    source_labels,
    uniform_cells,
)

#: Above this fraction of boundary pixels the dense paths are faster: per
#: pixel, gathering four corners costs about four PyTorch interpolations.
SPARSE_MAX_FRACTION = 0.25


def _source_index(out_size: int, in_size: int, align_corners: bool,
                  device: torch.device
                  ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Lower/upper source index and weight of each output position.

    PyTorch's ``upsample_bilinear2d`` rule, in its float32 arithmetic:
    ``src = (dst + 0.5) * scale - 0.5`` clamped at 0 with ``scale = in / out``
    (``align_corners=False``), ``src = dst * (in - 1) / (out - 1)`` otherwise.
    Whether the kernel fuses the multiply-add of the first rule depends on the
    kernel PyTorch dispatches to (its AVX2/AVX-512 CPU builds fuse, its
    baseline build does not), so both roundings are computed and the one that
    PyTorch's own kernel reproduces on ``device`` is kept
    (:func:`_pytorch_weights`). Equal weights give equal interpolated values.

    Returns:
        (low, high, weight of high), each (out_size,).
    """
    dst = torch.arange(out_size, dtype=torch.float64, device=device)
    if align_corners:
        scale = (torch.tensor(float(in_size - 1)) / (out_size - 1)
                 if out_size > 1 else torch.tensor(0.0))
        return _split(dst.float() * scale.to(device), in_size)
    scale = torch.tensor(float(in_size)) / out_size  # float32 division
    # float64 holds the float32 product exactly: one rounding, as FMA
    fused = ((dst + 0.5) * scale.double().to(device) - 0.5).float()
    candidates = [_split(fused.clamp(min=0), in_size)]
    separate = (dst.float() + 0.5) * scale.to(device) - 0.5  # two roundings
    if not torch.equal(separate, fused):
        candidates.append(_split(separate.clamp(min=0), in_size))
        observed = _pytorch_weights(out_size, in_size, device)
        for low, high, weight in candidates:
            moving = high != low  # clamped positions read one pixel
            if torch.equal(_probe_values(low, weight)[:, moving],
                           observed[:, moving]):
                return low, high, weight
    return candidates[0]  # an unknown kernel: the fused rule, within 1 ulp


def _split(src: torch.Tensor, in_size: int
           ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(low, high, weight of high) of float32 source positions (K,)."""
    low = src.floor().long().clamp(max=in_size - 1)
    high = (low + 1).clamp(max=in_size - 1)
    return low, high, (src - low.float()).clamp(0, 1)


def _grid_indices(out_hw: Tuple[int, int], in_hw: Tuple[int, int],
                  align_corners: bool, device: torch.device) -> tuple:
    """:func:`_source_index` of the output rows and of its columns."""
    return tuple(_source_index(out_size, in_size, align_corners, device)
                 for out_size, in_size in zip(out_hw, in_hw))


def _band_rows(num_classes: int, out_w: int, tile_bytes: int) -> int:
    """Output rows per band: ``tile_bytes`` of float32 resized scores."""
    return max(1, tile_bytes // max(1, 4 * num_classes * out_w))


def _pytorch_weights(out_size: int, in_size: int, device: torch.device
                     ) -> torch.Tensor:
    """PyTorch's interpolation of an alternating 0/1 row to ``out_size``.

    Between a 0 and a 1 the kernel's value is its weight of the 1, exactly
    (the other product is 0), so this is the weight of the upper neighbour
    where it is odd and one minus it where it is even: (2, out_size).
    """
    row = torch.arange(in_size, device=device) % 2
    probe = torch.stack([row, 1 - row]).float()[:, None, None]
    return F.interpolate(probe, size=(1, out_size), mode='bilinear',
                         align_corners=False)[:, 0, 0]


def _probe_values(low: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """What :func:`_pytorch_weights` returns if these are the weights."""
    upper_odd = (low % 2 == 0)
    first = torch.where(upper_odd, weight, 1 - weight)
    second = torch.where(upper_odd, 1 - weight, weight)
    return torch.stack([first, second])


def label_dtype(num_classes: int) -> np.dtype:
    """The smallest unsigned dtype holding ``num_classes`` labels."""
    return np.dtype(np.uint8 if num_classes <= 256 else np.uint16)


def resize_argmax(logits: torch.Tensor, size: Tuple[int, int],
                  align_corners: bool = False,
                  threshold: Optional[float] = None,
                  tile_bytes: int = 64 << 20,
                  sparse_max: float = SPARSE_MAX_FRACTION) -> np.ndarray:
    """Labels of ``logits`` bilinearly resized to ``size``, band by band.

    Args:
        logits: (C, h, w) class scores.
        size: output (H, W).
        align_corners: as the segmentor's (mmseg default False).
        threshold: one-channel (sigmoid) models: label 1 where
            ``sigmoid(logit) > threshold``, as mmseg does.
        tile_bytes: float32 bytes of one resized band (C x rows x W).
        sparse_max: interpolate only boundary pixels when they are at most
            this fraction of the output (0: never, 1: always).

    Returns:
        (H, W) labels, uint8 (uint16 above 256 classes), equal to
        ``F.interpolate(logits[None], size, mode='bilinear').argmax(1)`` up to
        float rounding at exact ties.
    """
    num_classes, in_h, in_w = logits.shape
    out_h, out_w = (int(v) for v in size)
    scores = logits.float()
    if (out_h, out_w) == (in_h, in_w):  # the resize is the identity
        return _labels(scores.permute(1, 2, 0), threshold, num_classes)
    # Source indices only for the paths that gather with them (the one-band
    # path below is PyTorch's own kernel).
    rows = cols = None
    binary_ok = num_classes > 1 or (threshold is not None
                                    and 0 < threshold < 1)
    if (sparse_max > 0 and binary_ok
            and _probed_mixed_fraction(scores, threshold) <= 2 * sparse_max):
        rows, cols = _grid_indices((out_h, out_w), (in_h, in_w),
                                   align_corners, scores.device)
        labels, decided = source_labels(scores, threshold)
        uniform = uniform_cells(labels, decided)
        if _mixed_fraction(uniform, rows[0], cols[0]) <= sparse_max:
            return _boundary_only(scores, labels, uniform, rows, cols,
                                  threshold, tile_bytes)
    if 4 * num_classes * out_h * out_w <= tile_bytes:
        # Fits in one band: PyTorch's own kernel on a classes-last tensor,
        # one pass over the output (2.4x faster than the gathers below).
        resized = F.interpolate(
            scores[None].contiguous(memory_format=torch.channels_last),
            size=(out_h, out_w), mode='bilinear',
            align_corners=align_corners)[0].permute(1, 2, 0)
        return _labels(resized, threshold, num_classes)
    if rows is None:
        rows, cols = _grid_indices((out_h, out_w), (in_h, in_w),
                                   align_corners, scores.device)
    return _dense_banded(scores, rows, cols, threshold, tile_bytes)


def nonfinite_pixels(logits: torch.Tensor, size: Tuple[int, int],
                     align_corners: bool = False) -> torch.Tensor:
    """Pixels of :func:`resize_argmax`'s output whose resized scores are not
    all finite, as PyTorch's bilinear resize makes them.

    Its kernel multiplies all four corners of a pixel's cell, even at weight
    0, so one NaN / inf corner score (any class) makes the pixel non-finite.
    At the input size nothing is resized: the input's own pixels.

    Args:
        logits: (C, h, w) class scores.
        size: output (H, W).
        align_corners: as for :func:`resize_argmax`.

    Returns:
        (H, W) bool, on ``logits``' device.
    """
    bad = ~torch.isfinite(logits).all(0)
    size = tuple(int(v) for v in size)
    if size == tuple(bad.shape) or not bool(bad.any()):
        return bad if size == tuple(bad.shape) else bad.new_zeros(size)
    rows, cols = _grid_indices(size, tuple(bad.shape), align_corners,
                               bad.device)
    bad = bad[rows[0]] | bad[rows[1]]
    return bad[:, cols[0]] | bad[:, cols[1]]


def _probed_mixed_fraction(scores: torch.Tensor,
                           threshold: Optional[float],
                           probes: int = 32) -> float:
    """Fraction of mixed cells along ``probes`` evenly spaced source rows:
    noise (random weights) is sent to the dense paths for about 1/16 of the
    cost of labelling every source pixel."""
    height = scores.shape[1]
    top = torch.arange(0, height, max(1, height // probes),
                       device=scores.device)
    pairs = torch.stack([top, (top + 1).clamp(max=height - 1)], 1).flatten()
    labels, decided = source_labels(scores.index_select(1, pairs), threshold)
    return 1 - uniform_cells(labels, decided)[0::2].float().mean().item()


def _mixed_fraction(uniform: torch.Tensor, rows_low: torch.Tensor,
                    cols_low: torch.Tensor) -> float:
    """Fraction of output pixels in non-uniform cells (from the number of
    output rows/columns per source row/column, without a full-size mask)."""
    h, w = uniform.shape
    per_row = torch.bincount(rows_low, minlength=h).double()
    per_col = torch.bincount(cols_low, minlength=w).double()
    mixed = per_row @ (~uniform).double() @ per_col
    return mixed.item() / (len(rows_low) * len(cols_low))


def _boundary_only(scores: torch.Tensor, labels: torch.Tensor,
                   uniform: torch.Tensor, rows: tuple, cols: tuple,
                   threshold: Optional[float], tile_bytes: int) -> np.ndarray:
    """Uniform cells' label looked up, boundary pixels interpolated."""
    num_classes = scores.shape[0]
    rows_low, rows_high, rows_w = rows
    cols_low, cols_high, cols_w = cols
    out_h, out_w = len(rows_low), len(cols_low)
    out = np.empty((out_h, out_w), label_dtype(max(num_classes, 2)))
    band_rows = _band_rows(num_classes, out_w, tile_bytes)
    for start in range(0, out_h, band_rows):
        band = slice(start, min(out_h, start + band_rows))
        low = rows_low[band]
        band_labels = labels.index_select(0, low)[:, cols_low]
        ys, xs = (~uniform.index_select(0, low)[:, cols_low]).nonzero(
            as_tuple=True)
        if ys.numel():
            values = interpolate_at(
                scores, (low[ys], rows_high[band][ys], rows_w[band][ys]),
                (cols_low[xs], cols_high[xs], cols_w[xs]))
            if num_classes == 1:
                band_labels[ys, xs] = (values[0].sigmoid() > threshold).long()
            else:
                band_labels[ys, xs] = first_argmax_top2(values)[0]
        out[band] = band_labels.cpu().numpy()
    return out


def _dense_banded(scores: torch.Tensor, rows: tuple, cols: tuple,
                  threshold: Optional[float], tile_bytes: int) -> np.ndarray:
    """Every pixel interpolated, ``tile_bytes`` of resized scores at a time."""
    num_classes = scores.shape[0]
    # Classes last: the column gathers then move whole class vectors and the
    # argmax reduces over contiguous memory (2-4x faster than over dim 0 of
    # (C, H, W); the arithmetic, hence every value, is the same).
    scores = scores.permute(1, 2, 0).contiguous()
    rows_low, rows_high, rows_w = rows
    cols_low, cols_high, cols_w = cols
    out_h, out_w = len(rows_low), len(cols_low)
    out = np.empty((out_h, out_w), label_dtype(max(num_classes, 2)))
    band_rows = _band_rows(num_classes, out_w, tile_bytes)
    wx = cols_w.view(1, -1, 1)
    for start in range(0, out_h, band_rows):
        stop = min(out_h, start + band_rows)
        wy = rows_w[start:stop].view(-1, 1, 1)
        band = scores.index_select(0, rows_low[start:stop]) * (1 - wy)
        band += scores.index_select(0, rows_high[start:stop]) * wy
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
