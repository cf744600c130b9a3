"""Brightness-invariant color term of the official albedo loss."""
import torch

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import (
    as_float_mask,
    check_same_shape,
    masked_sum_mean,
    zero_non_finite,
)


def chromaticity(rgb: torch.Tensor, eps: float) -> torch.Tensor:
    """(B, 3, H, W) -> rgb / (r + g + b + eps)."""
    return rgb / (rgb.sum(dim=1, keepdim=True) + eps)


@MODELS.register_module()
class AlbedoChromaticityL1Loss(DenseLossBase):
    """``w * sum_M |chroma(clamp(pred, 0, 1)) - chroma(gt)| / M.sum()``.

    Args:
        loss_weight: w (official 1).
        eps: added to r + g + b.
        loss_name: official ``'loss_chroma_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0, eps: float = 1e-6,
                 loss_name: str = 'loss_chroma_l1'):
        super().__init__(loss_weight, loss_name)
        self.eps = eps

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) RGB pred/target in [0, 1], (B, 1, H, W) mask."""
        check_same_shape(pred, target, type(self).__name__)
        mask = as_float_mask(valid_mask, pred)
        error = (chromaticity(pred.clamp(0, 1), self.eps) -
                 chromaticity(target, self.eps)).abs()
        return zero_non_finite(masked_sum_mean(error, mask) * self.loss_weight)
