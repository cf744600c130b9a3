"""Gradient term of the official normal loss (named L1, computes an MSE)."""
import torch

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import (
    as_float_mask,
    check_same_shape,
    forward_difference_mse,
    zero_non_finite,
)


@MODELS.register_module()
class NormalGradL1Loss(DenseLossBase):
    """``w * (MSE(dx_pred, dx_gt) + MSE(dy_pred, dy_gt))`` on valid pixel pairs.

    Despite the official name this is a squared error of forward differences
    (``x[..., 1:] - x[..., :-1]``); a difference counts where both pixels are
    valid, channels are summed, each direction is averaged over its valid
    pairs, and the two directions are added.

    Args:
        loss_weight: w (official 10).
        loss_name: official ``'loss_grad_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0,
                 loss_name: str = 'loss_grad_l1'):
        super().__init__(loss_weight, loss_name)

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, C, H, W) pred/target, (B, 1, H, W) mask -> scalar."""
        check_same_shape(pred, target, type(self).__name__)
        loss_dx, loss_dy = forward_difference_mse(
            pred, target, as_float_mask(valid_mask, pred))
        return zero_non_finite((loss_dx + loss_dy) * self.loss_weight)
