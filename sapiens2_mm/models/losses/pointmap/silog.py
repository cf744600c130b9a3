"""Scale-invariant log depth term of the official pointmap loss."""
import torch

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import as_float_mask, check_same_shape


def guarded_sqrt(x: torch.Tensor) -> torch.Tensor:
    """``sqrt(x)`` for x > 0 and 0 elsewhere, with a finite gradient.

    ``torch.sqrt`` has an infinite derivative at 0, which becomes NaN in the
    backward pass when the log differences are all zero (a perfect
    prediction, or a sample without valid pixels). Values are unchanged.
    """
    positive = x > 0
    return torch.where(positive, torch.where(positive, x, 1.0).sqrt(),
                       torch.zeros_like(x))


@MODELS.register_module()
class PointmapSiLogLoss(DenseLossBase):
    """SiLog on the Z channel: ``w * mean_b sqrt(E[d^2] - lambda E[d]^2)``.

    ``d = log(max(gt_z, 1e-4)) - log(max(pred_z, 1e-4))`` over the pixels that
    are valid, have ``gt_z > min_target`` and a non-NaN d; per-sample means use
    a count clamped to at least 1e-4 (so an empty sample gives 0), then the
    mean over the batch (empty samples included, as officially).

    Args:
        loss_weight: w (official 1).
        variance_focus: lambda (official 0.5).
        min_target: GT depths at or below it are left out (official -100).
        clamp_eps: lower clamp of depths before the log (official 1e-4).
        loss_name: official ``'loss_silog'``.
    """

    def __init__(self, loss_weight: float = 1.0, variance_focus: float = 0.5,
                 min_target: float = -100.0, clamp_eps: float = 1e-4,
                 loss_name: str = 'loss_silog'):
        super().__init__(loss_weight, loss_name)
        self.variance_focus = variance_focus
        self.min_target = min_target
        self.clamp_eps = clamp_eps

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) pointmaps (Z is channel 2) or (B, 1, H, W) depths."""
        check_same_shape(pred, target, type(self).__name__)
        mask = as_float_mask(valid_mask, pred)
        if pred.shape[1] == 3:
            pred, target = pred[:, 2:3], target[:, 2:3]
        pred, target = pred.flatten(1), target.flatten(1)
        diff = (torch.log(target.clamp(min=self.clamp_eps)) -
                torch.log(pred.clamp(min=self.clamp_eps)))
        valid = ((mask.flatten(1) > 0) & (target > self.min_target) &
                 ~torch.isnan(diff))
        diff = torch.where(valid, diff, torch.zeros_like(diff))
        count = valid.to(diff.dtype).sum(1).clamp(min=self.clamp_eps)
        mean_sq = diff.pow(2).sum(1) / count
        mean = diff.sum(1) / count
        per_sample = guarded_sqrt(mean_sq - self.variance_focus * mean.pow(2))
        return per_sample.mean() * self.loss_weight
