"""MAE pixel decoder for rectangular patch grids (e.g. 64 x 48 at 1024 x 768).

mmpretrain's ``MAEPretrainDecoder`` builds its sin-cos positions for a square
sqrt(N) x sqrt(N) grid and expects one CLS token; Sapiens2 inputs are 4:3 and
carry CLS + 8 storage tokens, so this decoder computes the 2-D table for the
actual (h, w) grid on every call and passes all prefix tokens through.
"""
from typing import Tuple

import torch
from mmengine.model import BaseModule
from torch import nn

from ...registry import MODELS
from ..layers import Sapiens2Block, build_rms_norm


def sincos_pos_embed_2d(grid: Tuple[int, int], dims: int,
                        temperature: float = 10000.0) -> torch.Tensor:
    """Fixed 2-D sin-cos position table of MAE for an (h, w) grid.

    The first ``dims / 2`` channels encode the row (y), the rest the column
    (x); each half is ``[sin(p * f_k), cos(p * f_k)]`` with
    ``f_k = temperature ** (-k / (dims / 4))``.

    Args:
        grid: (h, w).
        dims: channels, divisible by 4.

    Returns:
        (h * w, dims) float32, rows in row-major grid order.
    """
    if dims % 4:
        raise ValueError(f'sin-cos positions need dims divisible by 4, got {dims}')
    h, w = grid
    freqs = temperature**(-torch.arange(dims // 4, dtype=torch.float64) /
                          (dims // 4))
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64),
                            torch.arange(w, dtype=torch.float64), indexing='ij')

    def encode(pos: torch.Tensor) -> torch.Tensor:
        angles = pos.flatten()[:, None] * freqs[None]
        return torch.cat((angles.sin(), angles.cos()), dim=1)

    return torch.cat((encode(ys), encode(xs)), dim=1).float()


@MODELS.register_module()
class RectMAEDecoder(BaseModule):
    """Restore the masked tokens and predict every patch's pixels.

    Steps: project encoder tokens to ``decoder_embed_dims``, append one learned
    ``mask_token`` per hidden patch, unshuffle to grid order with
    ``ids_restore``, add the fixed 2-D sin-cos table (prefix tokens get none,
    as MAE's CLS), run ``depth`` pre-norm blocks (Sapiens2 blocks without RoPE,
    QK-norm or LayerScale), RMSNorm, and a linear map to patch pixels.

    Args:
        in_channels: encoder width C.
        decoder_embed_dims: decoder width.
        depth: decoder blocks.
        num_heads: decoder attention heads.
        patch_size: p; outputs hold p * p * out_channels values per patch.
        out_channels: image channels to reconstruct.
        num_prefix_tokens: CLS + storage tokens in front of the patch tokens.
        mlp_ratio: SwiGLU hidden width / decoder width.
        init_cfg: mmengine init config.
    """

    def __init__(self, in_channels: int, decoder_embed_dims: int = 512,
                 depth: int = 8, num_heads: int = 16, patch_size: int = 16,
                 out_channels: int = 3, num_prefix_tokens: int = 9,
                 mlp_ratio: float = 4.0, init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        self.patch_size = patch_size
        self.out_channels = out_channels
        self.num_prefix_tokens = num_prefix_tokens
        self.decoder_embed_dims = decoder_embed_dims
        self.decoder_embed = nn.Linear(in_channels, decoder_embed_dims)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dims))
        self.blocks = nn.ModuleList([
            Sapiens2Block(decoder_embed_dims, num_heads,
                          int(decoder_embed_dims * mlp_ratio),
                          use_qk_norm=False, layer_scale_init_value=0.0)
            for _ in range(depth)
        ])
        self.norm = build_rms_norm(decoder_embed_dims)
        self.pred = nn.Linear(decoder_embed_dims,
                              patch_size * patch_size * out_channels)

    def init_weights(self) -> None:
        """MAE init: normal(0.02) mask token, trunc-normal(0.02) linears."""
        super().init_weights()
        nn.init.normal_(self.mask_token, std=0.02)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor, ids_restore: torch.Tensor,
                grid: Tuple[int, int]) -> torch.Tensor:
        """Decode.

        Args:
            tokens: (B, P + K, C) encoder output, P prefix tokens then the K
                kept patch tokens in ``ids_keep`` order.
            ids_restore: (B, N) from the mask (N = h * w).
            grid: (h, w).

        Returns:
            (B, N, p * p * out_channels) pixel predictions in grid order.
        """
        batch, num_patches = ids_restore.shape
        if num_patches != grid[0] * grid[1]:
            raise ValueError(
                f'ids_restore covers {num_patches} patches but the grid '
                f'{grid} has {grid[0] * grid[1]}')
        x = self.decoder_embed(tokens)
        prefix, kept = x[:, :self.num_prefix_tokens], x[:,
                                                        self.num_prefix_tokens:]
        hidden = num_patches - kept.shape[1]
        patches = torch.cat(
            (kept, self.mask_token.expand(batch, hidden, -1).to(kept.dtype)),
            dim=1)
        patches = torch.gather(
            patches, 1,
            ids_restore[..., None].expand(-1, -1, patches.shape[-1]))
        pos = sincos_pos_embed_2d(grid, self.decoder_embed_dims).to(patches)
        x = torch.cat((prefix, patches + pos[None]), dim=1)
        for block in self.blocks:
            x = block(x)
        return self.pred(self.norm(x))[:, self.num_prefix_tokens:]
