"""SwiGLU feed-forward block (Shazeer 2020, as used by DINOv2/v3)."""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class SwiGLUFFN(nn.Module):
    """``out = identity + w3(SiLU(a) * b)`` with ``[a, b] = w12(x)``.

    The fused projection ``w12`` holds the gate rows first (``[0:F]``, through SiLU)
    and the value rows second (``[F:2F]``), as in the official checkpoints.

    Args:
        embed_dims: C.
        feedforward_channels: hidden width F (Sapiens2: 4C, not the 2/3 variant).
        bias: use biases in both projections.
    """

    def __init__(self, embed_dims: int, feedforward_channels: int,
                 bias: bool = True):
        super().__init__()
        self.w12 = nn.Linear(embed_dims, 2 * feedforward_channels, bias=bias)
        self.w3 = nn.Linear(feedforward_channels, embed_dims, bias=bias)

    def forward(self, x: torch.Tensor,
                identity: Optional[torch.Tensor] = None) -> torch.Tensor:
        """(B, N, C) -> (B, N, C); adds ``identity`` if given."""
        gate, value = self.w12(x).chunk(2, dim=-1)
        out = self.w3(F.silu(gate) * value)
        return out if identity is None else identity + out
