"""Non-overlapping patch embedding."""
from typing import Tuple

import torch
from torch import nn


class PatchEmbed(nn.Module):
    """Conv2d(kernel = stride = patch_size) then flatten to row-major tokens.

    Args:
        in_channels: image channels.
        embed_dims: C.
        patch_size: patch side in pixels.
    """

    def __init__(self, in_channels: int = 3, embed_dims: int = 768,
                 patch_size: int = 16):
        super().__init__()
        self.in_channels = in_channels
        self.patch_size = patch_size
        self.projection = nn.Conv2d(
            in_channels, embed_dims, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, Tuple[int, int]]:
        """Embed patches.

        Args:
            x: (B, in_channels, H, W) with H and W divisible by ``patch_size``.

        Returns:
            tokens (B, h*w, C) with h the slow index, and the grid (h, w).
        """
        x = self.projection(x)
        grid = (x.shape[2], x.shape[3])
        return x.flatten(2).transpose(1, 2), grid
