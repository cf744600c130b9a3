"""Masked (token-dropping) forward of Sapiens2 against the official vectors."""
import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file

from sapiens2_mm.models.backbones import Sapiens2
from sapiens2_mm.models.layers import (
    mask_from_ids_keep,
    num_kept_patches,
    random_patch_mask,
)
from sapiens2_mm.registry import MODELS
from tests.conftest import OFFICIAL_TOLERANCE, max_diff_to_official

# the thread count the official vectors reproduce at (conftest)
pytestmark = pytest.mark.usefixtures('official_vector_threads')

# Dropping hidden tokens vs hiding them by an attention mask, on the same
# machine and input: float32 rounding of one CPU, within 1e-5 under every
# kernel set tried (conftest.CROSS_CPU_MARGIN lists them).
TOLERANCE = 1e-5
TINY = dict(embed_dims=32, num_layers=2, num_heads=4, feedforward_channels=64,
            num_tokenizer_layers=1)


def _official(name, parity_file, repo_path, out_type='raw'):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', f'tiny18_backbone_{name}.py'))
    cfg.model.out_type = out_type
    model = MODELS.build(cfg.model).eval()
    model.load_state_dict(load_file(parity_file(f'tiny18_{name}.safetensors')))
    return model, load_file(parity_file(f'tiny18_{name}_io.safetensors'))


@pytest.mark.parametrize('name', ['1k', '4k'])
def test_mask_ratio_zero_reproduces_official(name, parity_file, repo_path):
    model, io = _official(name, parity_file, repo_path)
    x = io['input']
    mask = model.random_mask(x, 0.0)
    assert not mask.mask.any()
    with torch.no_grad():
        raw = model(x, ids_keep=mask.ids_keep)[0]
        plain = model(x)[0]
    h, w = io['output'].shape[-2:]
    feat = raw[:, 9:].reshape(x.shape[0], h, w, -1).permute(0, 3, 1, 2)
    assert max_diff_to_official(feat, name) <= OFFICIAL_TOLERANCE
    # ratio 0 is the identity gather: bit-identical to the unmasked path
    # (the same kernels on the same tensors, in one process).
    assert torch.equal(raw, plain)


@pytest.mark.parametrize('ratio', [0.0, 0.5, 0.75, 0.7, 0.3])
def test_kept_token_count(ratio):
    model = Sapiens2(arch=TINY, img_size=(80, 64)).eval()  # 5 x 4 = 20 patches
    x = torch.randn(3, 3, 80, 64)
    mask = model.random_mask(x, ratio, generator=torch.Generator().manual_seed(0))
    expected = int(20 * (1 - ratio) + 1e-9)  # hand: 20, 10, 5, 6, 14
    assert expected == {0.0: 20, 0.5: 10, 0.75: 5, 0.7: 6, 0.3: 14}[ratio]
    assert mask.ids_keep.shape == (3, expected)
    assert int((~mask.mask).sum(1).unique()) == expected
    with torch.no_grad():
        out = model(x, mask=mask.mask)[0]
    assert out.shape == (3, expected + 9, 32)
    assert num_kept_patches(10, 0.7) == 3  # 10 * 0.3 = 2.9999999999999996


def test_kept_tokens_match_rope_at_true_positions(parity_file, repo_path):
    """Dropping hidden patches equals hiding them by an attention mask.

    Reference: the full sequence with its full-grid RoPE, where an explicit
    attention mask stops every token from attending to hidden patches (one
    block, so hidden tokens cannot leak in through earlier layers).
    """
    model, io = _official('1k', parity_file, repo_path)
    model.blocks = model.blocks[:1]
    model.num_layers, model.out_indices = 1, [0]
    x = io['input']
    mask = model.random_mask(x, 0.5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        masked = model(x, ids_keep=mask.ids_keep)[0]
        # Reference: full forward where hidden patches are made unattendable.
        tokens, rope, _ = model.prepare_tokens(x)
        block = model.blocks[0]
        attn = block.attn
        y = block.ln1(tokens)
        q = attn._split_heads(attn.wq(y), attn.num_heads)
        k = attn._split_heads(attn.wk(y), attn.num_kv_heads)
        v = attn._split_heads(attn.wv(y), attn.num_kv_heads)
        q, k = attn.q_norm(q), attn.k_norm(k)
        from sapiens2_mm.models.layers import apply_rope
        q, k = apply_rope(q, rope), apply_rope(k, rope)
        visible = torch.cat((torch.ones(2, 9, dtype=torch.bool), ~mask.mask), 1)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=visible[:, None, None, :])
        out = attn.gamma(attn.proj(out.transpose(1, 2).reshape(tokens.shape)))
        ref = block.ffn(block.ln2(tokens + out), identity=tokens + out)
        ref = model.ln1(ref)
    keep = torch.cat((torch.arange(9).expand(2, 9), mask.ids_keep + 9), 1)
    ref = torch.gather(ref, 1, keep[..., None].expand(-1, -1, ref.shape[-1]))
    assert (masked - ref).abs().max().item() <= TOLERANCE


@pytest.mark.parametrize('name', ['1k', '4k'])
def test_permuting_kept_tokens_permutes_outputs(name, parity_file, repo_path):
    model, io = _official(name, parity_file, repo_path)
    x = io['input']
    mask = model.random_mask(x, 0.5, generator=torch.Generator().manual_seed(2))
    perm = torch.randperm(mask.ids_keep.shape[1],
                          generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = model(x, ids_keep=mask.ids_keep)[0]
        out_perm = model(x, ids_keep=mask.ids_keep[:, perm])[0]
    # Only the order of the attention sums changes, so the difference is
    # float32 rounding, of the same kind as another CPU's kernels
    # (conftest.OFFICIAL_TOLERANCE), and it grows with the output's magnitude
    # (~3.5): 1.01e-5 (1K) on an AVX-512 CPU, up to 4.69e-5 (4K) with other
    # kernels (oneDNN off, ATEN_CPU_CAPABILITY=default); a wrong RoPE row is
    # off by O(1).
    bound = OFFICIAL_TOLERANCE * max(1.0, out.abs().max().item())
    assert (out_perm[:, 9:] - out[:, 9:][:, perm]).abs().max() <= bound
    assert (out_perm[:, :9] - out[:, :9]).abs().max() <= bound


def test_window_masking_equals_gather_after_tokenizer(parity_file, repo_path):
    model, io = _official('4k', parity_file, repo_path)
    x = io['input']
    mask = model.random_mask(x, 0.5, generator=torch.Generator().manual_seed(4))
    assert mask.mask.shape == (2, 12)  # the 4 x 3 window grid
    with torch.no_grad():
        tokens, _, _ = model.prepare_tokens(x, ids_keep=mask.ids_keep)
        full, _, _ = model.prepare_tokens(x)
    ref = torch.gather(full[:, 9:], 1,
                       mask.ids_keep[..., None].expand(-1, -1, 32))
    assert (tokens[:, 9:] - ref).abs().max() <= 1e-6


def test_mask_helpers_roundtrip():
    mask = random_patch_mask(4, 12, 0.75, generator=torch.Generator().manual_seed(5))
    tokens = torch.arange(12.)[None, :, None].expand(4, 12, 1)
    kept = torch.gather(tokens, 1, mask.ids_keep[..., None])
    filler = torch.full((4, 9, 1), -1.)
    restored = torch.gather(torch.cat((kept, filler), 1), 1,
                            mask.ids_restore[..., None])[..., 0]
    expected = torch.where(mask.mask, -1., torch.arange(12.).expand(4, 12))
    assert torch.equal(restored, expected)
    again = mask_from_ids_keep(mask.ids_keep, 12)
    assert torch.equal(again.mask, mask.mask)


@pytest.mark.parametrize('ratio', [-0.1, 1.0, 1.5])
def test_bad_mask_ratio(ratio):
    with pytest.raises(ValueError, match=r'mask_ratio must be in \[0, 1\)'):
        random_patch_mask(1, 8, ratio)


def test_bad_masked_inputs():
    model = Sapiens2(arch=TINY, img_size=(32, 32), out_type='featmap')
    x = torch.randn(1, 3, 32, 32)
    with pytest.raises(ValueError, match='featmap'):
        model(x, ids_keep=torch.tensor([[0, 1]]))
    model.out_type = 'raw'
    with pytest.raises(ValueError, match='outside'):
        model(x, ids_keep=torch.tensor([[0, 4]]))
    with pytest.raises(ValueError, match='same number'):
        model(torch.randn(2, 3, 32, 32),
              mask=torch.tensor([[True, False, False, False],
                                 [True, True, False, False]]))
    with pytest.raises(ValueError, match='keeps no patch'):
        random_patch_mask(1, 4, 0.9)
