"""Canonical-scale term of the official pointmap loss."""
import torch

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase


@MODELS.register_module()
class PointmapScaleL1Loss(DenseLossBase):
    """``w * mean_b |s_pred - s_gt|`` with s = 768 / fx (the canonical scale).

    Official: the plain batch mean, whatever the masks. With
    ``skip_empty_masks=True`` (default) samples without a valid pixel are left
    out of the mean (the official data pipeline drops such samples, so on
    official batches the value is the same); a batch of only empty samples
    gives 0 with a gradient path.

    Args:
        loss_weight: w (official 4).
        skip_empty_masks: leave out samples whose mask is empty.
        loss_name: official ``'loss_scale_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0, skip_empty_masks: bool = True,
                 loss_name: str = 'loss_scale_l1'):
        super().__init__(loss_weight, loss_name)
        self.skip_empty_masks = skip_empty_masks

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """Context ``pred_scale`` and ``gt_scale``, both (B, 1); ``pred`` and
        ``target`` (the pointmaps) are not used."""
        name = type(self).__name__
        pred_scale = self.require(context, 'pred_scale', name)
        gt_scale = self.require(context, 'gt_scale', name)
        pred_scale = pred_scale.reshape(-1)
        gt_scale = gt_scale.to(pred_scale.dtype).reshape(-1)
        if pred_scale.shape != gt_scale.shape:
            raise ValueError(
                f'{name}: predicted scale {tuple(pred_scale.shape)} and GT '
                f'scale {tuple(gt_scale.shape)} must both hold one value per '
                'sample.')
        error = (pred_scale - gt_scale).abs()
        if not self.skip_empty_masks:
            return error.mean() * self.loss_weight
        keep = valid_mask.flatten(1).gt(0).any(1)
        error = torch.where(keep, error, torch.zeros_like(error))
        return error.sum() / keep.sum().clamp(min=1) * self.loss_weight
