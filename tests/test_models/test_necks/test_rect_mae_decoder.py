"""Rectangular MAE decoder: positions, restore order, shapes."""
import math

import pytest
import torch

from sapiens2_mm.models.layers import random_patch_mask
from sapiens2_mm.models.necks import RectMAEDecoder, sincos_pos_embed_2d


def test_sincos_table_matches_formula():
    table = sincos_pos_embed_2d((3, 2), 8)
    assert table.shape == (6, 8)
    # token (row 2, col 1) = index 5; freqs 10000^(-k/2), k = 0, 1.
    row, col = 2.0, 1.0
    freqs = [1.0, 10000**-0.5]
    expected = ([math.sin(row * f) for f in freqs] +
                [math.cos(row * f) for f in freqs] +
                [math.sin(col * f) for f in freqs] +
                [math.cos(col * f) for f in freqs])
    assert torch.allclose(table[5], torch.tensor(expected), atol=1e-6)
    with pytest.raises(ValueError, match='divisible by 4'):
        sincos_pos_embed_2d((2, 2), 6)


def test_decoder_restores_grid_order():
    torch.manual_seed(0)
    decoder = RectMAEDecoder(in_channels=8, decoder_embed_dims=8, depth=0,
                             num_heads=2, patch_size=2, num_prefix_tokens=9)
    decoder.init_weights()
    # Identity maps make the output of patch n its restored input + pos.
    with torch.no_grad():
        decoder.decoder_embed.weight.copy_(torch.eye(8))
        decoder.decoder_embed.bias.zero_()
    grid = (4, 3)
    mask = random_patch_mask(2, 12, 0.5, generator=torch.Generator().manual_seed(1))
    kept = torch.randn(2, 6, 8)
    tokens = torch.cat((torch.randn(2, 9, 8), kept), 1)
    captured = {}
    decoder.norm.register_forward_hook(
        lambda m, i, o: captured.setdefault('x', i[0]))
    pred = decoder(tokens, mask.ids_restore, grid)
    assert pred.shape == (2, 12, 2 * 2 * 3)
    x = captured['x'][:, 9:] - sincos_pos_embed_2d(grid, 8)
    for b in range(2):
        assert torch.allclose(x[b, mask.ids_keep[b]], kept[b], atol=1e-6)
        hidden = mask.mask[b].nonzero()[:, 0]
        assert torch.allclose(x[b, hidden],
                              decoder.mask_token[0].expand(6, -1), atol=1e-6)
    with pytest.raises(ValueError, match='grid'):
        decoder(tokens, mask.ids_restore, (3, 3))
