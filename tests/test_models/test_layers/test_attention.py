"""Attention against a naive reference with materialised, repeated K/V heads."""
import math

import torch

from sapiens2_mm.models.layers import GroupedQueryAttention, RopePositionEmbedding
from sapiens2_mm.models.layers.rope import apply_rope


def naive_attention(module, x, rope):
    """Textbook attention: repeat K/V per query head, softmax(QK^T/sqrt(d))V."""
    b, n, c = x.shape
    h, kv, d = module.num_heads, module.num_kv_heads, module.head_dim
    q = module.wq(x).view(b, n, h, d).transpose(1, 2)
    k = module.wk(x).view(b, n, kv, d).transpose(1, 2)
    v = module.wv(x).view(b, n, kv, d).transpose(1, 2)
    q, k = module.q_norm(q), module.k_norm(k)
    k = k.repeat_interleave(h // kv, dim=1)
    v = v.repeat_interleave(h // kv, dim=1)
    q, k = apply_rope(q, rope), apply_rope(k, rope)
    weights = (q @ k.transpose(-1, -2) / math.sqrt(d)).softmax(-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n, c)
    return module.gamma(module.proj(out))


def test_grouped_query_attention_matches_repeated_kv():
    torch.manual_seed(0)
    module = GroupedQueryAttention(32, 4, num_kv_heads=2,
                                   layer_scale_init_value=0.5)
    rope = RopePositionEmbedding(8)(3, 4)
    x = torch.randn(2, 9 + 12, 32)
    torch.testing.assert_close(module(x, rope), naive_attention(module, x, rope),
                               rtol=1e-5, atol=1e-6)
    assert module.wk.weight.shape == (16, 32)


def test_kv_head_j_serves_adjacent_query_heads():
    """Zeroing KV head 0 only changes query heads 0 and 1 (repeat_interleave)."""
    torch.manual_seed(0)
    module = GroupedQueryAttention(32, 4, num_kv_heads=2, use_qk_norm=False)
    x = torch.randn(1, 5, 32)
    module.proj.weight.data = torch.eye(32)
    module.proj.bias.data.zero_()
    before = module(x)
    module.wv.weight.data[:8] = 0
    module.wv.bias.data[:8] = 0
    after = module(x)
    changed = (before - after).abs().amax(dim=(0, 1)).view(4, 8).amax(-1) > 0
    assert changed.tolist() == [True, True, False, False]
