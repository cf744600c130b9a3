"""Surface-normal term of the official pointmap loss."""
from typing import Tuple

import torch
import torch.nn.functional as F

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import as_float_mask, check_same_shape


def pointmap_normals(pointmap: torch.Tensor, mask: torch.Tensor,
                     amplification: float = 100.0
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Unit normals ``normalize(cross(right - centre, down - centre))``.

    The map is reflect-padded by one pixel, so the last row/column use their
    mirrored neighbour. Differences are multiplied by ``amplification`` before
    the cross product (keeps small metric steps above the 1e-6 threshold).

    Args:
        pointmap: (B, 3, H, W) metric points.
        mask: (B, 1, H, W) 0/1.
        amplification: factor on the differences (official 100).

    Returns:
        normals (B, 3, H, W), zero where invalid, and the (B, 1, H, W) bool
        validity: mask and a cross product longer than 1e-6.
    """
    padded = F.pad(pointmap, (1, 1, 1, 1), mode='reflect')
    centre = padded[:, :, 1:-1, 1:-1]
    dx = (padded[:, :, 1:-1, 2:] - centre) * amplification
    dy = (padded[:, :, 2:, 1:-1] - centre) * amplification
    normal = torch.cross(dx, dy, dim=1)
    length = torch.linalg.vector_norm(normal, dim=1, keepdim=True)
    valid = (length > 1e-6) & (mask > 0)
    normal = normal / length.clamp(min=1e-6)
    return torch.where(valid, normal, torch.zeros_like(normal)), valid


@MODELS.register_module()
class PointmapNormalLoss(DenseLossBase):
    """Normals of the predicted vs the GT pointmap, both made metric first.

    Both canonical maps are divided by the GT canonical scale (``gt_scale``,
    768 / fx), turned into normals by :func:`pointmap_normals`, and compared
    where the *GT* normal is valid:
    ``(1 - clamp(cos, -1, 1)) + l1_weight * mean_c |n_pred - n_gt|``, summed
    and divided by the number of valid GT normals (at least 1).

    Args:
        loss_weight: w (official 2).
        l1_weight: weight of the L1 part (official 1).
        amplification: factor on the differences (official 100).
        loss_name: official ``'loss_normal'``.
    """

    def __init__(self, loss_weight: float = 1.0, l1_weight: float = 1.0,
                 amplification: float = 100.0,
                 loss_name: str = 'loss_normal'):
        super().__init__(loss_weight, loss_name)
        self.l1_weight = l1_weight
        self.amplification = amplification

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) canonical pointmaps; context ``gt_scale`` (B, 1)."""
        check_same_shape(pred, target, type(self).__name__)
        scale = self.require(context, 'gt_scale', type(self).__name__)
        scale = scale.reshape(-1, 1, 1, 1)
        mask = as_float_mask(valid_mask, pred)
        target = torch.where(torch.isfinite(target), target,
                             torch.zeros_like(target))
        pred_normal, _ = pointmap_normals(pred / scale, mask,
                                          self.amplification)
        gt_normal, valid = pointmap_normals(target / scale, mask,
                                            self.amplification)
        cos = (pred_normal * gt_normal).sum(1, keepdim=True).clamp(-1.0, 1.0)
        l1 = (pred_normal - gt_normal).abs().mean(1, keepdim=True)
        per_pixel = (1 - cos) + self.l1_weight * l1
        per_pixel = torch.where(valid, per_pixel, torch.zeros_like(per_pixel))
        loss = per_pixel.sum() / valid.sum().clamp(min=1)
        return loss * self.loss_weight
