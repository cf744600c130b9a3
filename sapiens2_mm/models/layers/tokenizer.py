"""Windowed tokenizer stem of the Sapiens2 4K model."""
from typing import Optional, Tuple

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .transformer_layer import Sapiens2Block


class WindowTokenizer(nn.Module):
    """Pool every ``window_size`` x ``window_size`` patch window into one token.

    Each window's patch tokens (row-major inside the window) get a shared learned
    CLS token in front and a learned position embedding, pass through plain
    self-attention blocks (no QK-norm, LayerScale or RoPE), and the CLS output
    becomes the window's token. The main trunk then attends globally over the
    window grid.

    Args:
        embed_dims: C.
        num_heads: heads of the tokenizer blocks.
        feedforward_channels: SwiGLU hidden width.
        num_layers: number of tokenizer blocks.
        window_size: window side in patches (4 in the official model).
        chunk_size: windows per forward chunk, bounding activation memory.
        with_cp: checkpoint each chunk while training.
    """

    def __init__(self, embed_dims: int, num_heads: int,
                 feedforward_channels: int, num_layers: int,
                 window_size: int = 4, chunk_size: int = 1024,
                 with_cp: bool = True):
        super().__init__()
        self.window_size = window_size
        self.chunk_size = chunk_size
        self.with_cp = with_cp
        self.local_pos_embed = nn.Parameter(
            torch.zeros(1, 1 + window_size**2, embed_dims))
        self.w_cls = nn.Parameter(torch.zeros(1, 1, embed_dims))
        self.blocks = nn.ModuleList([
            Sapiens2Block(
                embed_dims, num_heads, feedforward_channels,
                use_qk_norm=False, layer_scale_init_value=0.0)
            for _ in range(num_layers)
        ])

    def _pool_windows(self, windows: torch.Tensor) -> torch.Tensor:
        cls = self.w_cls.expand(windows.shape[0], -1, -1)
        x = torch.cat((cls, windows), dim=1) + self.local_pos_embed
        for block in self.blocks:
            x = block(x)
        return x[:, 0]

    def forward(self, x: torch.Tensor, grid: Tuple[int, int],
                ids_keep: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, Tuple[int, int]]:
        """Tokenize.

        Args:
            x: (B, h*w, C) patch tokens, row-major over the (h, w) grid.
            grid: (h, w), both divisible by ``window_size``.
            ids_keep: optional (B, K) long indices into the window grid
                (row-major): only these windows are pooled, in this order
                (window-level masking; each window is pooled independently,
                so this equals pooling all and gathering K).

        Returns:
            (B, G, C) window tokens with G = h/ws * w/ws (row-major), or
            (B, K, C) with ``ids_keep``, and the window grid (h/ws, w/ws).
        """
        (h, w), ws = grid, self.window_size
        batch, _, channels = x.shape
        gh, gw = h // ws, w // ws
        windows = x.reshape(batch, gh, ws, gw, ws, channels).permute(
            0, 1, 3, 2, 4, 5).reshape(batch, gh * gw, ws * ws * channels)
        if ids_keep is not None:
            windows = torch.gather(
                windows, 1,
                ids_keep[..., None].expand(-1, -1, windows.shape[-1]))
        count = windows.shape[1]
        windows = windows.reshape(batch * count, ws * ws, channels)
        pooled = []
        for chunk in windows.split(self.chunk_size):
            if self.with_cp and self.training and torch.is_grad_enabled():
                pooled.append(
                    checkpoint(self._pool_windows, chunk, use_reentrant=False))
            else:
                pooled.append(self._pool_windows(chunk))
        return torch.cat(pooled).reshape(batch, count, channels), (gh, gw)
