"""Per-image pointmap and depth errors (MoGe / Depth Anything conventions).

Each function scores one image over its valid pixels; the metrics average the
per-image values over the dataset.
"""
from typing import Dict, Optional

import torch


def point_errors(pred: torch.Tensor, gt: torch.Tensor,
                 gt_norm: Optional[torch.Tensor] = None) -> Dict[str, float]:
    """Relative point error and point inlier ratio of one image.

    Args:
        pred: (N, 3) predicted points (aligned if wanted), float64.
        gt: (N, 3) GT points, all with ``||p|| > 0``.
        gt_norm: (N,) ``||p||`` if already computed.

    Returns:
        ``rel_p`` = mean ``||p^ - p|| / ||p||`` and ``delta1_p`` = fraction
        of points with ``||p^ - p|| < 0.25 * min(||p||, ||p^||)``.
    """
    err = (pred - gt).norm(dim=1)
    gt_norm = gt.norm(dim=1) if gt_norm is None else gt_norm
    pred_norm = pred.norm(dim=1)
    inlier = err < 0.25 * torch.minimum(gt_norm, pred_norm)
    return dict(rel_p=float((err / gt_norm).mean()),
                delta1_p=float(inlier.double().mean()))


def depth_errors(pred: torch.Tensor, gt: torch.Tensor) -> Dict[str, float]:
    """Standard monocular depth errors of one image (mmseg ``DepthMetric``).

    Args:
        pred: (N,) predicted depth > 0, float64.
        gt: (N,) GT depth > 0.

    Returns:
        ``abs_rel`` = mean |d^-d|/d, ``sq_rel`` = mean (d^-d)^2/d, ``rmse``,
        ``rmse_log`` = sqrt(mean (log d^ - log d)^2), ``silog`` =
        sqrt(mean g^2 - 0.5 (mean g)^2) with g = log d^ - log d (lambda 0.5,
        no x100), ``d1``..``d3`` = fraction of max(d^/d, d/d^) < 1.25^k.
    """
    diff = pred - gt
    log_diff = torch.log(pred) - torch.log(gt)
    ratio = torch.maximum(pred / gt, gt / pred)
    out = dict(
        abs_rel=float((diff.abs() / gt).mean()),
        sq_rel=float((diff * diff / gt).mean()),
        rmse=float(torch.sqrt((diff * diff).mean())),
        rmse_log=float(torch.sqrt((log_diff * log_diff).mean())),
        silog=float(torch.sqrt(((log_diff * log_diff).mean() -
                                0.5 * log_diff.mean()**2).clamp_min(0))))
    for k in (1, 2, 3):
        out[f'd{k}'] = float((ratio < 1.25**k).double().mean())
    return out
