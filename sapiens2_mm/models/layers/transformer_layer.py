"""Pre-norm transformer block of Sapiens2 (``TransformerEncoderLayer2``)."""
from typing import Optional, Tuple

import torch
from torch import nn

from .attention import GroupedQueryAttention
from .norms import build_rms_norm
from .swiglu import SwiGLUFFN


class Sapiens2Block(nn.Module):
    """``y = x + Attn(ln1(x)); z = y + SwiGLU(ln2(y))``.

    LayerScale sits inside ``attn`` only; the FFN branch is unscaled and there is
    no drop-path anywhere in Sapiens2.

    Args:
        embed_dims: C.
        num_heads: attention heads.
        feedforward_channels: SwiGLU hidden width.
        num_kv_heads: K/V heads (< num_heads for grouped-query blocks).
        qkv_bias: biases on q/k/v projections.
        use_qk_norm: RMSNorm on q and k per head.
        layer_scale_init_value: attention LayerScale init; 0 disables it.
        drop_rate: dropout after the attention output projection.
    """

    def __init__(self, embed_dims: int, num_heads: int,
                 feedforward_channels: int, num_kv_heads: Optional[int] = None,
                 qkv_bias: bool = True, use_qk_norm: bool = True,
                 layer_scale_init_value: float = 1e-4,
                 drop_rate: float = 0.0):
        super().__init__()
        self.ln1 = build_rms_norm(embed_dims)
        self.attn = GroupedQueryAttention(
            embed_dims, num_heads, num_kv_heads, qkv_bias=qkv_bias,
            use_qk_norm=use_qk_norm,
            layer_scale_init_value=layer_scale_init_value, proj_drop=drop_rate)
        self.ln2 = build_rms_norm(embed_dims)
        self.ffn = SwiGLUFFN(embed_dims, feedforward_channels)

    def forward(
        self,
        x: torch.Tensor,
        rope: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
    ) -> torch.Tensor:
        """(B, N, C) -> (B, N, C)."""
        x = x + self.attn(self.ln1(x), rope)
        return self.ffn(self.ln2(x), identity=x)
