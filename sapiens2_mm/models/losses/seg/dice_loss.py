"""Softmax Dice loss over the foreground classes present in each sample."""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from sapiens2_mm.registry import MODELS


def present_class_dice_loss(logits: torch.Tensor,
                            target: torch.Tensor,
                            ignore_index: int = 255,
                            eps: float = 1e-3,
                            include_background: bool = False
                            ) -> torch.Tensor:
    """Per-sample Dice loss averaged over the classes present in the label.

    Args:
        logits: (B, K, H, W) raw scores; softmax over K is applied here.
        target: (B, H, W) int labels in [0, K) or ``ignore_index``.
        ignore_index: label of pixels left out of every sum.
        eps: smoothing added to numerator and denominator.
        include_background: keep class 0 in the class average.

    Returns:
        (B,) loss ``1 - mean_c dice_c`` over present classes, 0 for samples
        with no valid pixel or no present class.
    """
    num_classes = logits.shape[1]
    valid = (target != ignore_index)                                # (B,H,W)
    labels = torch.where(valid, target, torch.zeros_like(target))
    one_hot = F.one_hot(labels.long(), num_classes).permute(0, 3, 1, 2)
    mask = valid.unsqueeze(1).to(logits.dtype)                      # (B,1,H,W)
    prob = logits.softmax(dim=1) * mask
    gt = one_hot.to(logits.dtype) * mask
    if not include_background:
        prob, gt = prob[:, 1:], gt[:, 1:]
    inter = (prob * gt).flatten(2).sum(-1)                          # (B,K')
    denom = (prob * prob).flatten(2).sum(-1) + (gt * gt).flatten(2).sum(-1)
    dice = (2 * inter + eps) / (denom + eps)
    present = (gt.flatten(2).sum(-1) > 0).to(logits.dtype)          # (B,K')
    num_present = present.sum(-1)
    mean_dice = (dice * present).sum(-1) / num_present.clamp(min=1)
    sample_weight = (num_present > 0).to(logits.dtype)
    return (1 - mean_dice) * sample_weight


@MODELS.register_module()
class SegDiceLoss(nn.Module):
    """Official Sapiens2 segmentation Dice loss.

    Per sample and foreground class ``c`` present in the label:
    ``dice_c = (2 sum p g + eps) / (sum p^2 + sum g^2 + eps)`` over valid
    pixels, with ``p`` the softmax probability; the sample loss is
    ``1 - mean_c dice_c``; the batch loss is the mean over samples (samples
    without a valid pixel or a present class count as 0).

    Why not ``mmseg.DiceLoss``: mmseg flattens all classes and pixels of a
    sample into one Dice term (no per-class average, absent classes count in
    the denominator), keeps the background channel, does not mask ignored
    pixels out of the prediction (it uses ``ignore_index`` to drop a class
    *channel*), and adds eps only to the denominator. Each changes the value.

    Args:
        loss_weight: multiplier of the loss.
        eps: smoothing term.
        include_background: keep class 0 (official: False).
        reduction: 'mean' (official value) or 'none' (the (B,) vector).
        loss_name: key in the loss dict; must start with ``loss_``.
    """

    def __init__(self,
                 loss_weight: float = 1.0,
                 eps: float = 1e-3,
                 include_background: bool = False,
                 reduction: str = 'mean',
                 loss_name: str = 'loss_dice') -> None:
        super().__init__()
        if reduction not in ('mean', 'none'):
            raise ValueError(
                f"SegDiceLoss reduction must be 'mean' or 'none', got "
                f'{reduction!r}.')
        self.loss_weight = loss_weight
        self.eps = eps
        self.include_background = include_background
        self.reduction = reduction
        self._loss_name = loss_name

    def forward(self,
                pred: torch.Tensor,
                target: torch.Tensor,
                weight: Optional[torch.Tensor] = None,
                ignore_index: int = 255,
                **kwargs) -> torch.Tensor:
        """Compute the loss.

        Args:
            pred: (B, K, H, W) logits.
            target: (B, H, W) labels (255 = ignore).
            weight: unused; kept for mmseg's decode-head call signature.
            ignore_index: ignored label value.

        Returns:
            Scalar loss (reduction 'mean') or (B,) losses ('none').
        """
        if pred.shape[0] != target.shape[0] or pred.shape[2:] != target.shape[1:]:
            raise ValueError(
                f'SegDiceLoss needs logits (B, K, H, W) and labels (B, H, W) of '
                f'the same B, H, W; got {tuple(pred.shape)} and '
                f'{tuple(target.shape)}.')
        loss = present_class_dice_loss(pred, target, ignore_index, self.eps,
                                       self.include_background)
        if self.reduction == 'mean':
            loss = loss.mean()
        return self.loss_weight * loss

    @property
    def loss_name(self) -> str:
        """Name of the loss in the loss dict."""
        return self._loss_name
