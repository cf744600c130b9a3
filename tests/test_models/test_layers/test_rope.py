"""2-D RoPE tables and rotation against the official DINOv3-style axial formula."""
import math

import torch

from sapiens2_mm.models.layers import RopePositionEmbedding
from sapiens2_mm.models.layers.rope import apply_rope


def test_tables_follow_the_axial_formula_in_fp32():
    rope = RopePositionEmbedding(8, dtype='fp32')
    h, w = 3, 4
    sin, cos = rope(h, w)
    assert sin.shape == (h * w, 8) and sin.dtype == torch.float32
    periods = torch.tensor([100.0**(i / 2) for i in range(2)])
    for r in range(h):
        for c in range(w):
            y = 2 * (r + 0.5) / h - 1
            x = 2 * (c + 0.5) / w - 1
            angles = torch.cat([2 * math.pi * y / periods,
                                2 * math.pi * x / periods])
            angles = torch.cat([angles, angles])
            torch.testing.assert_close(cos[r * w + c], torch.cos(angles))
            torch.testing.assert_close(sin[r * w + c], torch.sin(angles))


def test_bf16_tables_and_rounding():
    rope = RopePositionEmbedding(8)
    sin, cos = rope(2, 2)
    assert sin.dtype == torch.bfloat16
    q = torch.randn(1, 2, 1 + 4, 8)
    out = apply_rope(q, (sin, cos))
    assert out.dtype == torch.float32
    # The prefix token is not rotated but is rounded to bf16 like the official.
    torch.testing.assert_close(out[:, :, 0], q[:, :, 0].bfloat16().float(),
                               rtol=0, atol=0)


def test_rotation_preserves_norm_and_relative_position():
    rope = RopePositionEmbedding(8, dtype='fp32')
    sin, cos = rope(4, 4)
    q = torch.randn(1, 1, 16, 8)
    rotated = apply_rope(q, (sin, cos))
    torch.testing.assert_close(rotated.norm(dim=-1), q.norm(dim=-1))


def test_min_max_period_mode():
    rope = RopePositionEmbedding(16, min_period=2.0, max_period=50.0,
                                 dtype='fp32')
    torch.testing.assert_close(rope.periods[0], torch.tensor(2.0))
    torch.testing.assert_close(rope.periods[-1], torch.tensor(50.0))
