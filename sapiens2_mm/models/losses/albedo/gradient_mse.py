"""Gradient term of the official albedo loss."""
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
class AlbedoGradL1Loss(DenseLossBase):
    """``w * 0.5 * (MSE(dx) + MSE(dy))`` on valid pixel pairs.

    The normal gradient term averaged over the two directions instead of
    summed (official); also a squared error despite the name.

    Args:
        loss_weight: w (official 2).
        loss_name: official ``'loss_grad_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0,
                 loss_name: str = 'loss_grad_l1'):
        super().__init__(loss_weight, loss_name)

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) pred/target, (B, 1, H, W) mask -> scalar."""
        check_same_shape(pred, target, type(self).__name__)
        loss_dx, loss_dy = forward_difference_mse(
            pred, target, as_float_mask(valid_mask, pred))
        return zero_non_finite((loss_dx + loss_dy) * 0.5 * self.loss_weight)
