"""Masked L1 loss (the official ``L1Loss`` of the normal and albedo heads)."""
import torch

from ...registry import MODELS
from .dense_loss_base import DenseLossBase
from .dense_ops import as_float_mask, check_same_shape, masked_l1, zero_non_finite


@MODELS.register_module()
class MaskedL1Loss(DenseLossBase):
    """``w * sum_M |pred - target| / M.sum()``, channels summed per pixel.

    The normal head applies it to the raw (not unit-normalized) prediction.
    Empty mask: 0 with a gradient path. NaN / inf results become 0.

    Args:
        loss_weight: w (official: normal 1, albedo 2).
        loss_name: official ``'loss_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0, loss_name: str = 'loss_l1'):
        super().__init__(loss_weight, loss_name)

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, C, H, W) pred/target, (B, 1, H, W) mask -> scalar."""
        check_same_shape(pred, target, type(self).__name__)
        mask = as_float_mask(valid_mask, pred)
        return zero_non_finite(masked_l1(pred, target, mask) * self.loss_weight)
