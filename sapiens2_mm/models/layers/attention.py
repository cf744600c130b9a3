"""Multi-head / grouped-query self-attention with QK-norm, RoPE and LayerScale."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .layer_scale import LayerScale
from .norms import build_rms_norm
from .rope import apply_rope


class GroupedQueryAttention(nn.Module):
    """Self-attention where ``num_kv_heads`` K/V heads serve ``num_heads`` queries.

    KV head j serves query heads ``j*g .. j*g+g-1`` (g = num_heads / num_kv_heads),
    the ``repeat_interleave`` grouping of the official code. The repeated K/V are
    never materialised: ``scaled_dot_product_attention(enable_gqa=True)`` groups
    the heads itself. RoPE is elementwise per head, so rotating the un-repeated
    keys equals rotating the repeated ones.

    Args:
        embed_dims: C.
        num_heads: query heads; head_dim = C / num_heads.
        num_kv_heads: key/value heads, dividing ``num_heads``.
        qkv_bias: biases on ``wq``/``wk``/``wv``.
        use_qk_norm: RMSNorm over head_dim on q and k (``q_norm``/``k_norm``).
        layer_scale_init_value: LayerScale ``gamma`` on the output; 0 disables.
        proj_drop: dropout after ``proj``.
    """

    def __init__(self, embed_dims: int, num_heads: int,
                 num_kv_heads: Optional[int] = None, qkv_bias: bool = True,
                 use_qk_norm: bool = True,
                 layer_scale_init_value: float = 0.0,
                 proj_drop: float = 0.0):
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if embed_dims % num_heads or num_heads % num_kv_heads:
            raise ValueError(
                f'embed_dims ({embed_dims}) must divide by num_heads '
                f'({num_heads}) and num_heads by num_kv_heads ({num_kv_heads}).')
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = embed_dims // num_heads
        kv_dims = num_kv_heads * self.head_dim
        self.wq = nn.Linear(embed_dims, embed_dims, bias=qkv_bias)
        self.wk = nn.Linear(embed_dims, kv_dims, bias=qkv_bias)
        self.wv = nn.Linear(embed_dims, kv_dims, bias=qkv_bias)
        if use_qk_norm:
            self.q_norm = build_rms_norm(self.head_dim)
            self.k_norm = build_rms_norm(self.head_dim)
        else:
            self.q_norm = self.k_norm = None
        self.proj = nn.Linear(embed_dims, embed_dims)
        self.proj_drop = nn.Dropout(proj_drop)
        self.gamma = (
            LayerScale(embed_dims, layer_scale_init_value)
            if layer_scale_init_value > 0 else nn.Identity())

    def _split_heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        batch, tokens, _ = x.shape
        return x.reshape(batch, tokens, heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        rope: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
    ) -> torch.Tensor:
        """Attend.

        Args:
            x: (B, N, C) tokens; with ``rope``, the last h*w are grid tokens.
            rope: (sin, cos) tables, each (h*w, head_dim), or None.

        Returns:
            (B, N, C).
        """
        batch, tokens, channels = x.shape
        q = self._split_heads(self.wq(x), self.num_heads)
        k = self._split_heads(self.wk(x), self.num_kv_heads)
        v = self._split_heads(self.wv(x), self.num_kv_heads)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        out = F.scaled_dot_product_attention(
            q, k, v, enable_gqa=self.num_kv_heads != self.num_heads)
        out = out.transpose(1, 2).reshape(batch, tokens, channels)
        return self.gamma(self.proj_drop(self.proj(out)))
