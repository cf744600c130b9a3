"""The three L1 terms of the official pointmap loss.

Each works on pointmaps divided by the per-sample mean GT depth
(``mean_depth``, (B, 1, 1, 1)) and clamps its weighted value to at most
``max_value`` (official 4.0), as the official pointmap head does for
``loss_l1``, ``loss_multiscale_l1_*`` and ``loss_shift_invariant``.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ....registry import MODELS
from ..dense_loss_base import DenseLossBase
from ..dense_ops import (
    as_float_mask,
    check_same_shape,
    masked_l1,
    zero_non_finite,
)


class _DepthNormalizedL1Base(DenseLossBase):
    """Shared set-up: depth normalization, weighting and the clamp."""

    def __init__(self, loss_weight: float, loss_name: str,
                 max_value: Optional[float]):
        super().__init__(loss_weight, loss_name)
        self.max_value = max_value

    def _normalized(self, pred, target, valid_mask, context):
        check_same_shape(pred, target, type(self).__name__)
        mean_depth = self.require(context, 'mean_depth', type(self).__name__)
        mean_depth = mean_depth.reshape(-1, 1, 1, 1)
        mask = as_float_mask(valid_mask, pred)
        return pred / mean_depth, target / mean_depth, mask

    def _finish(self, loss: torch.Tensor) -> torch.Tensor:
        loss = zero_non_finite(loss * self.loss_weight)
        if self.max_value is not None:
            loss = loss.clamp(max=self.max_value)
        return loss


@MODELS.register_module()
class PointmapL1Loss(_DepthNormalizedL1Base):
    """``min(w * sum_M |p/m - g/m| / M.sum(), max_value)``, m = mean GT depth.

    Args:
        loss_weight: w (official 2).
        max_value: clamp of the weighted value (official 4.0; None: off).
        loss_name: official ``'loss_l1'``.
    """

    def __init__(self, loss_weight: float = 1.0,
                 max_value: Optional[float] = 4.0,
                 loss_name: str = 'loss_l1'):
        super().__init__(loss_weight, loss_name, max_value)

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) canonical pointmaps; context ``mean_depth``."""
        pred, target, mask = self._normalized(pred, target, valid_mask,
                                              context)
        return self._finish(masked_l1(pred, target, mask))


@MODELS.register_module()
class PointmapMultiscaleL1Loss(_DepthNormalizedL1Base):
    """The depth-normalized L1 after up-sampling by ``scale_factor``.

    Prediction and GT are resized bilinearly (``align_corners=False``), the
    mask with nearest neighbours; the official config uses x2.

    Args:
        loss_weight: w (official 1).
        scale_factor: resize factor (official 2).
        mode: ``'bilinear'`` or ``'bicubic'``.
        max_value: clamp of the weighted value (official 4.0).
        loss_name: default ``'loss_multiscale_l1_{scale_factor}'`` (official).
    """

    def __init__(self, loss_weight: float = 1.0, scale_factor: int = 2,
                 mode: str = 'bilinear', max_value: Optional[float] = 4.0,
                 loss_name: Optional[str] = None):
        if mode not in ('bilinear', 'bicubic'):
            raise ValueError(
                f"PointmapMultiscaleL1Loss mode must be 'bilinear' or "
                f"'bicubic', got {mode!r}.")
        super().__init__(loss_weight,
                         loss_name or f'loss_multiscale_l1_{scale_factor}',
                         max_value)
        self.scale_factor = scale_factor
        self.mode = mode

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) canonical pointmaps; context ``mean_depth``."""
        pred, target, mask = self._normalized(pred, target, valid_mask,
                                              context)
        # Non-finite GT (never official data) would spread through the resize.
        target = torch.where(torch.isfinite(target), target,
                             torch.zeros_like(target))
        resize = dict(scale_factor=self.scale_factor, mode=self.mode,
                      align_corners=False)
        pred = F.interpolate(pred, **resize)
        target = F.interpolate(target, **resize)
        mask = F.interpolate(mask, scale_factor=self.scale_factor,
                             mode='nearest')
        return self._finish(masked_l1(pred, target, mask))


@MODELS.register_module()
class PointmapShiftInvariantL1Loss(_DepthNormalizedL1Base):
    """The depth-normalized L1 after removing each map's masked centroid.

    Centroid per sample and channel: ``sum_M x / (M.sum() + 1e-6)``.

    Args:
        loss_weight: w (official 1).
        max_value: clamp of the weighted value (official 4.0).
        loss_name: official ``'loss_shift_invariant'``.
    """

    def __init__(self, loss_weight: float = 1.0,
                 max_value: Optional[float] = 4.0,
                 loss_name: str = 'loss_shift_invariant'):
        super().__init__(loss_weight, loss_name, max_value)

    @staticmethod
    def _centred(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        masked = torch.where(mask > 0, x, torch.zeros_like(x))
        centroid = masked.sum(dim=(2, 3), keepdim=True) / (
            mask.sum(dim=(2, 3), keepdim=True) + 1e-6)
        return x - centroid

    def forward(self, pred: torch.Tensor, target: torch.Tensor,
                valid_mask: torch.Tensor, **context) -> torch.Tensor:
        """(B, 3, H, W) canonical pointmaps; context ``mean_depth``."""
        pred, target, mask = self._normalized(pred, target, valid_mask,
                                              context)
        return self._finish(masked_l1(self._centred(pred, mask),
                                      self._centred(target, mask), mask))
