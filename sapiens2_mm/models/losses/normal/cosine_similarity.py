"""Cosine term of the official normal loss."""
import torch
import torch.nn.functional as F

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import (
    as_float_mask,
    check_same_shape,
    masked_sum_mean,
    zero_non_finite,
)


@MODELS.register_module()
class NormalCosineSimilarityLoss(DenseLossBase):
    """``w * sum_M (1 - cos(pred, target)) / M.sum()``.

    Both maps are L2-normalized over channels first (``F.normalize``, eps
    1e-6), so the head's output does not need to be unit length.

    Args:
        loss_weight: w (official 10).
        eps: normalization eps.
        loss_name: official ``'loss_cosine_sim'``.
    """

    def __init__(self, loss_weight: float = 1.0, eps: float = 1e-6,
                 loss_name: str = 'loss_cosine_sim'):
        super().__init__(loss_weight, loss_name)
        self.eps = eps

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) normals, (B, 1, H, W) mask -> scalar."""
        check_same_shape(pred, target, type(self).__name__)
        mask = as_float_mask(valid_mask, pred)
        target = torch.where(mask > 0, target,
                             torch.ones_like(target))  # finite where invalid
        cos = (F.normalize(pred, dim=1, eps=self.eps) *
               F.normalize(target, dim=1, eps=self.eps)).sum(1, keepdim=True)
        loss = masked_sum_mean(1 - cos, mask)
        return zero_non_finite(loss * self.loss_weight)
