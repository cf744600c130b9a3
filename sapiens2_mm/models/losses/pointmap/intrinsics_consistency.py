"""Pinhole consistency term of the official pointmap loss."""
import torch

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import as_float_mask, masked_sum_mean, zero_non_finite


@MODELS.register_module()
class PointmapIntrinsicsConsistencyLoss(DenseLossBase):
    """``w * sum_M (|X - (u - cx) Z / fx| + |Y - (v - cy) Z / fy|) / M.sum()``.

    X, Y, Z are the predicted pointmap's channels, (u, v) the pixel column and
    row, and K the intrinsics after the geometric transforms but before the
    canonical rescale (``cam_K``; official ``original_K``). It holds in
    canonical space because the canonical rescale is isotropic.

    Args:
        loss_weight: w (official 1).
        loss_name: official ``'loss_K_consistency'``.
    """

    def __init__(self, loss_weight: float = 1.0,
                 loss_name: str = 'loss_K_consistency'):
        super().__init__(loss_weight, loss_name)

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) pointmap; context ``intrinsics`` (B, 3, 3)."""
        K = self.require(context, 'intrinsics', type(self).__name__)
        if K.dim() != 3 or K.shape[1:] != (3, 3) or K.shape[0] != pred.shape[0]:
            raise ValueError(
                f'{type(self).__name__} needs intrinsics of shape (B, 3, 3) '
                f'with B={pred.shape[0]}; got {tuple(K.shape)}.')
        mask = as_float_mask(valid_mask, pred)
        _, _, height, width = pred.shape
        cols = torch.arange(width, device=pred.device, dtype=K.dtype)
        rows = torch.arange(height, device=pred.device, dtype=K.dtype)
        fx, fy = K[:, 0, 0].view(-1, 1, 1), K[:, 1, 1].view(-1, 1, 1)
        cx, cy = K[:, 0, 2].view(-1, 1, 1), K[:, 1, 2].view(-1, 1, 1)
        z = pred[:, 2]
        x_hat = (cols.view(1, 1, -1) - cx) * z / fx
        y_hat = (rows.view(1, -1, 1) - cy) * z / fy
        error = ((pred[:, 0] - x_hat).abs() +
                 (pred[:, 1] - y_hat).abs()).unsqueeze(1)
        return zero_non_finite(masked_sum_mean(error, mask) * self.loss_weight)
