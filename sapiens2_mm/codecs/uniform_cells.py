"""Where a bilinear upsampling of class scores cannot change the argmax.

An output pixel of a bilinear resize is a convex combination of four source
pixels (one *cell*). If class ``c`` beats every other class at all four
corners, it beats them in every convex combination: the whole cell takes
label ``c`` without interpolating the scores. Only the pixels of *mixed*
cells (corners with different labels, or a near tie at a corner) need the
interpolated scores. A trained segmenter's label map is mostly uniform
regions, so the upsampled label map of a large photo costs a look-up plus the
interpolation of its boundary pixels instead of ``C`` full-size channels.

Near ties are sent to the exact path: float32 bilinear interpolation rounds a
score by at most a few units in the last place of the largest score, far less
than :data:`TIE_MARGIN` of it, so a cell counted as uniform gets the label
PyTorch's interpolation + argmax would give.
"""
from typing import Optional, Tuple

import torch

#: A corner is decided if its best score leads the runner-up by more than
#: this fraction of max(1, largest |score|) (float32 rounding of the bilinear
#: sum is about 2e-7 of it).
TIE_MARGIN = 1e-5


def first_argmax_top2(scores: torch.Tensor
                      ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Best class (first on ties, as ``argmax``), best and second score.

    One pass over the class planes with running maxima: a reduction over the
    leading class dim of a (C, N) tensor is several times slower in PyTorch
    (strided), and ``topk`` slower still.

    Args:
        scores: (C, ...) class scores, C >= 2.

    Returns:
        (...) int64 labels, (...) best scores, (...) second-best scores.
    """
    best = scores[0].clone()
    second = torch.full_like(best, float('-inf'))
    labels = torch.zeros(best.shape, dtype=torch.long, device=scores.device)
    for c in range(1, scores.shape[0]):
        plane = scores[c]
        wins = plane > best  # strict: the first class keeps a tie
        torch.maximum(second, torch.where(wins, best, plane), out=second)
        torch.maximum(best, plane, out=best)
        labels.masked_fill_(wins, c)
    return labels, best, second


def source_labels(scores: torch.Tensor, threshold: Optional[float]
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Label and "decided" flag of every source pixel.

    Args:
        scores: (C, h, w) float class scores; C == 1: one logit thresholded
            on its sigmoid (label 1 where ``sigmoid(x) > threshold``).
        threshold: the sigmoid threshold for C == 1, in (0, 1).

    Returns:
        (h, w) int64 labels and (h, w) bool: the label leads by more than
        the tie margin.
    """
    lo, hi = torch.aminmax(scores)
    margin = TIE_MARGIN * max(1.0, lo.abs().item(), hi.abs().item())
    if scores.shape[0] == 1:
        cut = torch.logit(torch.tensor(float(threshold))).item()
        logit = scores[0]
        return (logit > cut).long(), (logit - cut).abs() > margin
    labels, best, second = first_argmax_top2(scores)
    return labels, best - second > margin


def uniform_cells(labels: torch.Tensor, decided: torch.Tensor) -> torch.Tensor:
    """(h, w) bool: the cell whose top-left corner is (i, j) has four decided
    corners with one label. Its bottom/right corners are row i + 1 / column
    j + 1, clamped to the last row/column as the bilinear indices are."""
    h, w = labels.shape
    down = torch.arange(1, h + 1, device=labels.device).clamp(max=h - 1)
    right = torch.arange(1, w + 1, device=labels.device).clamp(max=w - 1)
    below, beside = labels[down], labels[:, right]
    diagonal = below[:, right]
    return (decided & decided[down] & decided[:, right]
            & decided[down][:, right] & (labels == below)
            & (labels == beside) & (labels == diagonal))


def interpolate_at(scores: torch.Tensor, rows: Tuple, cols: Tuple
                   ) -> torch.Tensor:
    """Bilinear scores at K output pixels, as PyTorch's kernel sums them.

    ``upsample_bilinear2d`` on CPU blends along the width first, then along
    the height: ``(v00 wx0 + v01 wx1) wy0 + (v10 wx0 + v11 wx1) wy1``. With
    the same weights (:func:`~sapiens2_mm.codecs.label_resize._source_index`)
    the values agree with its contiguous kernel to one float32 rounding
    (its vectorised kernels fuse some multiply-adds; its channels-last and
    contiguous kernels differ from each other by as much).

    Args:
        scores: (C, h, w).
        rows: (low, high, weight of high) source rows, each (K,).
        cols: (low, high, weight of high) source columns, each (K,).

    Returns:
        (C, K) interpolated scores.
    """
    width = scores.shape[2]
    flat = scores.reshape(scores.shape[0], -1)
    (r0, r1, wy), (c0, c1, wx) = rows, cols
    top = (flat.index_select(1, r0 * width + c0) * (1 - wx)
           + flat.index_select(1, r0 * width + c1) * wx)
    bottom = (flat.index_select(1, r1 * width + c0) * (1 - wx)
              + flat.index_select(1, r1 * width + c1) * wx)
    return top * (1 - wy) + bottom * wy
