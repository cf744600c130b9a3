"""Masked-patch pixel reconstruction loss for rectangular images.

mmpretrain's ``MAEPretrainHead.patchify`` asserts square images; Sapiens2
pretrains at 1024 x 768, so patchify / unpatchify here take any H x W that the
patch size divides.
"""
from typing import Tuple

import torch
from mmengine.model import BaseModule

from ....registry import MODELS


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, h*w, p*p*C), patches row-major, pixels (py, px, c).

    Raises:
        ValueError: H or W not divisible by ``patch_size``.
    """
    batch, channels, height, width = images.shape
    if height % patch_size or width % patch_size:
        raise ValueError(
            f'patchify needs H x W = {height} x {width} divisible by '
            f'patch_size={patch_size}')
    h, w = height // patch_size, width // patch_size
    x = images.reshape(batch, channels, h, patch_size, w, patch_size)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(batch, h * w,
                                               patch_size**2 * channels)


def unpatchify(patches: torch.Tensor, grid: Tuple[int, int],
               patch_size: int) -> torch.Tensor:
    """Inverse of :func:`patchify`: (B, h*w, p*p*C) -> (B, C, h*p, w*p)."""
    batch = patches.shape[0]
    h, w = grid
    channels = patches.shape[-1] // patch_size**2
    x = patches.reshape(batch, h, w, patch_size, patch_size, channels)
    return x.permute(0, 5, 1, 3, 2, 4).reshape(batch, channels, h * patch_size,
                                               w * patch_size)


@MODELS.register_module()
class RectMAEHead(BaseModule):
    """Mean squared error on the hidden patches only.

    Args:
        patch_size: p.
        norm_pix: normalize each target patch by its own mean and variance
            (MAE's ``norm_pix_loss``). Default False: per-patch normalization
            removes each patch's mean color and contrast, and Sapiens2's dense
            tasks (albedo, normals, body-part segmentation) need color and
            shading, so the default target is the image itself (normalized
            once per channel by the data preprocessor).
        eps: variance floor of ``norm_pix``.
        loss_weight: multiplier of the loss.
    """

    def __init__(self, patch_size: int = 16, norm_pix: bool = False,
                 eps: float = 1e-6, loss_weight: float = 1.0, init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        self.patch_size = patch_size
        self.norm_pix = norm_pix
        self.eps = eps
        self.loss_weight = loss_weight

    def target(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, N, p*p*C) reconstruction target."""
        target = patchify(images, self.patch_size)
        if self.norm_pix:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + self.eps)**0.5
        return target

    def loss(self, pred: torch.Tensor, images: torch.Tensor,
             mask: torch.Tensor) -> torch.Tensor:
        """Reconstruction loss.

        Args:
            pred: (B, N, p*p*C) decoder output.
            images: (B, C, H, W) the student's (normalized) input.
            mask: (B, N) bool, True = hidden from the encoder (scored).

        Returns:
            Scalar: per-patch MSE averaged over hidden patches (0 with a
            gradient path when nothing is hidden).
        """
        target = self.target(images).to(pred.dtype)
        if pred.shape != target.shape:
            raise ValueError(
                f'pred {tuple(pred.shape)} does not match the patchified '
                f'target {tuple(target.shape)}')
        per_patch = (pred - target).pow(2).mean(dim=-1)
        weights = mask.to(per_patch.dtype)
        hidden = weights.sum()
        if hidden == 0:
            return pred.sum() * 0.0
        return self.loss_weight * (per_patch * weights).sum() / hidden
