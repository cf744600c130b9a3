"""Masked reductions shared by the dense (normal / pointmap / albedo) losses.

Conventions of the official dense losses: ``mask`` is (B, 1, H, W), 1 at valid
pixels; a masked mean divides the sum over valid pixels *and channels* by the
number of valid pixels (``mask.sum()``, clamped to at least 1), so per-pixel
channel errors are summed. Invalid pixels are selected out with ``torch.where``
rather than multiplied by 0, so NaN / inf targets there cannot leak into the
value or the gradient; on finite inputs both give the same number. An empty
mask gives 0 with a gradient path (0 / 1), never NaN.
"""
from typing import Tuple

import torch
import torch.nn.functional as F


def as_float_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(B, 1, H, W) bool / float mask as 0/1 floats (at least float32).

    Pixel counts stay exact under bf16 autocast (a bf16 sum of ~10^6 ones is
    not).

    Raises:
        ValueError: the mask is not (B, 1, H, W) with ``like``'s B, H, W.
    """
    if (mask.dim() != 4 or mask.shape[1] != 1 or mask.shape[0] != like.shape[0]
            or mask.shape[2:] != like.shape[2:]):
        raise ValueError(
            f'valid_mask must be (B, 1, H, W) matching the prediction '
            f'{tuple(like.shape)}; got {tuple(mask.shape)}.')
    return (mask > 0).to(torch.promote_types(like.dtype, torch.float32))


def check_same_shape(pred: torch.Tensor, target: torch.Tensor,
                     name: str) -> None:
    """Raise a ValueError naming ``name`` if the shapes differ."""
    if pred.shape != target.shape:
        raise ValueError(
            f'{name}: prediction {tuple(pred.shape)} and target '
            f'{tuple(target.shape)} must have the same shape.')


def masked_sum_mean(error: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sum of ``error`` over valid pixels and all channels / valid pixel count.

    Args:
        error: (B, C, H, W) per-pixel, per-channel error.
        mask: (B, 1, H, W) 0/1 float.

    Returns:
        Scalar; 0 (with a gradient path) when the mask is empty.
    """
    selected = torch.where(mask > 0, error, torch.zeros_like(error))
    return selected.sum() / mask.sum().clamp(min=1)


def zero_non_finite(loss: torch.Tensor) -> torch.Tensor:
    """NaN / +-inf -> 0, as the official losses do on their final value."""
    return torch.nan_to_num(loss, nan=0.0, posinf=0.0, neginf=0.0)


def masked_l1(pred: torch.Tensor, target: torch.Tensor,
              mask: torch.Tensor) -> torch.Tensor:
    """``sum_M |pred - target| / M.sum()`` (channels summed)."""
    return masked_sum_mean((pred - target).abs(), mask)


def forward_difference_mse(pred: torch.Tensor, target: torch.Tensor,
                           mask: torch.Tensor
                           ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Squared error of horizontal and vertical forward differences.

    ``dx = x[..., 1:] - x[..., :-1]`` (``dy`` likewise along H). A difference
    counts where both of its pixels are valid; each term is the masked mean
    (channels summed) over those pixel pairs.

    Args:
        pred, target: (B, C, H, W).
        mask: (B, 1, H, W) 0/1 float.

    Returns:
        (loss_dx, loss_dy) scalars.
    """
    target = target.to(pred.dtype)
    pred_dx = pred[..., :, 1:] - pred[..., :, :-1]
    pred_dy = pred[..., 1:, :] - pred[..., :-1, :]
    target_dx = target[..., :, 1:] - target[..., :, :-1]
    target_dy = target[..., 1:, :] - target[..., :-1, :]
    mask_dx = mask[..., :, 1:] * mask[..., :, :-1]
    mask_dy = mask[..., 1:, :] * mask[..., :-1, :]
    loss_dx = masked_sum_mean(F.mse_loss(pred_dx, target_dx, reduction='none'),
                              mask_dx)
    loss_dy = masked_sum_mean(F.mse_loss(pred_dy, target_dy, reduction='none'),
                              mask_dy)
    return loss_dx, loss_dy
