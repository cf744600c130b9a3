"""Per-image alignment of predicted pointmaps / depth to the ground truth.

Closed-form solvers (least squares, or a ratio of medians), computed over the
valid pixels of one image in float64:

* ``'none'``: the prediction as is (metric evaluation);
* ``'scale'``: ``s* = argmin_s sum ||s p^ - p||^2 = sum p^.p / sum ||p^||^2``;
* ``'affine'``: ``(s*, t*) = argmin sum ||s p^ + t - p||^2`` with a 3-D
  shift ``t`` for points and a scalar shift for depth;
* ``'median'``: ``s = median(||p||) / median(||p^||)`` for points,
  ``median(d) / median(d^)`` for depth (lower median for an even count, as
  ``torch.median``; the Depth Anything / Monodepth rule).
"""
from typing import Tuple

import torch

ALIGNMENTS = ('none', 'scale', 'affine', 'median')
_TINY = 1e-30


def _ls_scale(pred: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
    return (pred * gt).sum() / (pred * pred).sum().clamp_min(_TINY)


def fit_alignment(pred: torch.Tensor, gt: torch.Tensor,
                  mode: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Scale and shift that map ``pred`` onto ``gt``.

    Args:
        pred: (N, 3) points or (N,) depths (float64).
        gt: same shape as ``pred``.
        mode: one of :data:`ALIGNMENTS`.

    Returns:
        ``(scale, shift)``: a 0-d scale and a shift of shape (3,) for points
        or 0-d for depth, such that ``scale * pred + shift`` is aligned.
    """
    shift = torch.zeros(pred.shape[1:], dtype=pred.dtype, device=pred.device)
    if mode == 'none':
        return torch.ones((), dtype=pred.dtype, device=pred.device), shift
    if mode == 'scale':
        return _ls_scale(pred, gt), shift
    if mode == 'affine':
        pred_mean, gt_mean = pred.mean(dim=0), gt.mean(dim=0)
        scale = _ls_scale(pred - pred_mean, gt - gt_mean)
        return scale, gt_mean - scale * pred_mean
    if mode == 'median':
        if pred.ndim == 2:
            num, den = gt.norm(dim=1).median(), pred.norm(dim=1).median()
        else:
            num, den = gt.median(), pred.median()
        return num / den.clamp_min(_TINY), shift
    raise ValueError(f'alignment must be one of {ALIGNMENTS}, got {mode!r}.')


def align(pred: torch.Tensor, gt: torch.Tensor, mode: str) -> torch.Tensor:
    """``pred`` aligned to ``gt`` with :func:`fit_alignment`."""
    scale, shift = fit_alignment(pred, gt, mode)
    return scale * pred + shift
