"""Sapiens2 backbone: official sizes, outputs, freezing, checkpointing, errors."""
import pytest
import torch

from sapiens2_mm.models.backbones import ARCH_ZOO, Sapiens2

TINY = dict(embed_dims=32, num_layers=4, num_heads=4, feedforward_channels=128,
            num_tokenizer_layers=1)

# Parameter and state-dict key counts verified on the official code
# (architecture zoo and state_dict).
OFFICIAL_SIZES = [
    ('sapiens2_0.1b', False, 113_993_472, 210),
    ('sapiens2_0.4b', False, 395_450_368, 414),
    ('sapiens2_0.8b', False, 814_283_520, 550),
    ('sapiens2_1b', False, 1_455_474_176, 686),
    ('sapiens2_1b', True, 1_606_588_928, 744),
    ('sapiens2_5b', False, 5_066_902_976, 958),
]


@pytest.mark.parametrize('arch,tokenizer,params,keys', OFFICIAL_SIZES)
def test_official_sizes(arch, tokenizer, params, keys):
    with torch.device('meta'):
        model = Sapiens2(arch=arch, use_tokenizer=tokenizer)
    assert sum(p.numel() for p in model.parameters()) == params
    assert len(model.state_dict()) == keys


def test_gqa_blocks_follow_the_8_8_rule():
    with torch.device('meta'):
        model = Sapiens2(arch='sapiens2_0.4b')
    kv = [block.attn.num_kv_heads for block in model.blocks]
    assert kv == [16] * 8 + [8] * 8 + [16] * 8
    assert tuple(model.state_dict()['blocks.8.attn.wk.weight'].shape) == (512, 1024)


def test_arch_is_case_insensitive_and_dict_accepted():
    with torch.device('meta'):
        assert Sapiens2(arch='SAPIENS2_0.1B').embed_dims == 768
    assert Sapiens2(arch=TINY).num_layers == 4


@pytest.mark.parametrize('out_type,shape', [
    ('featmap', (2, 32, 4, 3)),
    ('raw', (2, 9 + 12, 32)),
    ('cls_token', (2, 32)),
])
def test_out_types(out_type, shape):
    model = Sapiens2(arch=TINY, out_type=out_type).eval()
    out = model(torch.randn(2, 3, 64, 48))
    assert isinstance(out, tuple) and len(out) == 1
    assert tuple(out[0].shape) == shape


def test_several_out_indices_only_last_is_normed():
    model = Sapiens2(arch=TINY, out_type='raw', out_indices=[1, -1]).eval()
    x = torch.randn(1, 3, 32, 32)
    mid, last = model(x)
    ref = Sapiens2(arch=TINY, out_type='raw', out_indices=[1],
                   final_norm=False).eval()
    ref.load_state_dict(
        {k: v for k, v in model.state_dict().items() if k != 'ln1.weight'})
    torch.testing.assert_close(mid, ref(x)[0])
    # The final output is RMS-normalized: unit RMS times the (init 1) weight.
    rms = last.pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), rtol=1e-4, atol=1e-4)


def test_tokenizer_stride_and_shape():
    model = Sapiens2(arch=TINY, use_tokenizer=True, out_type='featmap').eval()
    assert model.stride == 64
    out = model(torch.randn(1, 3, 128, 192))[0]
    assert tuple(out.shape) == (1, 32, 2, 3)


def test_tokenizer_chunking_does_not_change_output():
    model = Sapiens2(arch=TINY, use_tokenizer=True, out_type='featmap').eval()
    x = torch.randn(1, 3, 128, 128)
    full = model(x)[0]
    model.tokenizer.chunk_size = 3
    torch.testing.assert_close(model(x)[0], full)


def test_activation_checkpointing_gives_same_output_and_grads():
    torch.manual_seed(0)
    plain = Sapiens2(arch=TINY, out_type='featmap')
    ckpt = Sapiens2(arch=TINY, out_type='featmap', with_cp=True)
    ckpt.load_state_dict(plain.state_dict())
    x = torch.randn(1, 3, 32, 32)
    out_plain, out_ckpt = plain(x)[0], ckpt(x)[0]
    torch.testing.assert_close(out_plain, out_ckpt)
    out_plain.sum().backward()
    out_ckpt.sum().backward()
    torch.testing.assert_close(plain.blocks[0].attn.wq.weight.grad,
                               ckpt.blocks[0].attn.wq.weight.grad)


def test_frozen_stages():
    model = Sapiens2(arch=TINY, frozen_stages=2, use_tokenizer=True)
    model.train()
    assert not model.cls_token.requires_grad
    assert not model.storage_tokens.requires_grad
    assert not any(p.requires_grad for p in model.patch_embed.parameters())
    assert not any(p.requires_grad for p in model.tokenizer.parameters())
    assert not any(p.requires_grad for p in model.blocks[1].parameters())
    assert all(p.requires_grad for p in model.blocks[2].parameters())
    assert model.ln1.weight.requires_grad
    assert not model.blocks[0].training and model.blocks[2].training
    all_frozen = Sapiens2(arch=TINY, frozen_stages=4)
    assert not all_frozen.ln1.weight.requires_grad


def test_official_initialization():
    torch.manual_seed(0)
    model = Sapiens2(arch='sapiens2_0.1b')
    model.init_weights()
    weight = model.blocks[0].attn.wq.weight
    assert abs(weight.std().item() - 0.02) < 2e-3
    assert torch.all(model.blocks[0].attn.wq.bias == 0)
    assert torch.all(model.blocks[0].attn.gamma.weight == 1e-4)
    assert torch.all(model.blocks[0].ln1.weight == 1)
    expected = torch.tensor([
        1.0, 1.3359, 1.7812, 2.375, 3.1562, 4.2188, 5.625, 7.5, 10.0, 13.3125,
        17.75, 23.75, 31.625, 42.25, 56.25, 75.0
    ])  # bf16 values measured on the official code (bf16 buffer)
    torch.testing.assert_close(
        model.rope_embed.periods.float(), expected, atol=1e-4, rtol=0)


def test_unknown_arch_lists_choices():
    with pytest.raises(ValueError) as err:
        Sapiens2(arch='sapiens2_2b')
    for name in ARCH_ZOO:
        assert name in str(err.value)


def test_bad_arch_dict():
    with pytest.raises(ValueError, match='num_tokenizer_layers'):
        Sapiens2(arch=dict(embed_dims=32, num_layers=2, num_heads=4,
                           feedforward_channels=64))


@pytest.mark.parametrize('shape,match', [
    ((1, 3, 40, 32), 'not divisible by patch_size = 16'),
    ((1, 1, 32, 32), '3 input channels but got 1'),
    ((3, 32, 32), r'\(B, C, H, W\)'),
])
def test_bad_input_shapes(shape, match):
    model = Sapiens2(arch=TINY)
    with pytest.raises(ValueError, match=match):
        model(torch.randn(*shape))


def test_tokenizer_input_must_divide_by_64():
    model = Sapiens2(arch=TINY, use_tokenizer=True)
    with pytest.raises(ValueError, match='patch_size x window_size = 64'):
        model(torch.randn(1, 3, 96, 64))


def test_bad_options():
    with pytest.raises(ValueError, match='out_type'):
        Sapiens2(arch=TINY, out_type='tokens')
    with pytest.raises(ValueError, match='out_indices'):
        Sapiens2(arch=TINY, out_indices=[4])
    with pytest.raises(ValueError, match='with_cls_token'):
        Sapiens2(arch=TINY, with_cls_token=False)
    with pytest.raises(ValueError, match='augmentations'):
        Sapiens2(arch=TINY, pos_embed_rope_jitter_coords=1.0)
