"""Parity with the official Sapiens2 code on the tiny18 vectors (max abs
<= 1e-5 on the CPU that made them, conftest.OFFICIAL_TOLERANCE on any)."""
import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS
from tests.conftest import OFFICIAL_TOLERANCE, max_diff_to_official

# the thread count the official vectors reproduce at (conftest)
pytestmark = pytest.mark.usefixtures('official_vector_threads')


@pytest.mark.parametrize('name', ['1k', '4k'])
def test_tiny18_matches_official(name, parity_file, repo_path):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', f'tiny18_backbone_{name}.py'))
    cfg.model.init_cfg = dict(
        type='Pretrained', checkpoint=parity_file(f'tiny18_{name}.safetensors'))
    model = MODELS.build(cfg.model)
    model.init_weights()  # the user path: checked load of the official file
    model.eval()
    io = load_file(parity_file(f'tiny18_{name}_io.safetensors'))
    assert tuple(io['input'].shape) == tuple(cfg.input_shape)
    with torch.no_grad():
        out = model(io['input'])
    assert len(out) == 1
    diff = max_diff_to_official(out[0], name)
    assert diff <= OFFICIAL_TOLERANCE, f'max abs diff {diff:.3g}'


def test_strict_load_of_official_key_set(parity_file, repo_path):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', 'tiny18_backbone_1k.py'))
    model = MODELS.build(cfg.model)
    state = load_file(parity_file('tiny18_1k.safetensors'))
    result = model.load_state_dict(state, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    # The key list shipped with the vectors equals ours, in order.
    with open(parity_file('keys_tiny18.txt')) as f:
        official = [line.split('\t')[0] for line in f if line.strip()]
    assert list(model.state_dict()) == official
    assert model.rope_embed.periods.dtype == torch.bfloat16


def test_fp32_rope_changes_output(parity_file, repo_path):
    """The bf16 rounding matters: an fp32 RoPE misses the bar, the cross-CPU
    margin included (1.1e-4 measured)."""
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', 'tiny18_backbone_1k.py'))
    cfg.model.pos_embed_rope_dtype = 'fp32'
    model = MODELS.build(cfg.model).eval()
    state = load_file(parity_file('tiny18_1k.safetensors'))
    state['rope_embed.periods'] = state['rope_embed.periods'].float()
    model.load_state_dict(state)
    io = load_file(parity_file('tiny18_1k_io.safetensors'))
    with torch.no_grad():
        out = model(io['input'])[0]
    assert max_diff_to_official(out, '1k') > OFFICIAL_TOLERANCE
