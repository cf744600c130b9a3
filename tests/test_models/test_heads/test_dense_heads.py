"""Dense heads: official parity, key layout, sizes, scale branch, outputs."""
import json

import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils import (
    CheckpointMismatchError,
    load_state_dict_checked,
    official_to_package,
    read_checkpoint,
)
from tests.conftest import (
    OFFICIAL_TOLERANCE,
    max_diff_to_official,
    official_output_sets,
)

# the dense tasks this package registers (each has official tiny18 vectors)
from tests.tiny_variants import DENSE_TASKS as TASKS

# As backbone, pose and seg: the 1e-5 bar plus the cross-CPU margin
# (conftest.OFFICIAL_TOLERANCE). With the official memory layouts (the
# backbone's permuted featmap view, RMSNorm2d's contiguous copies) the CPU
# runs the official float32 kernels and the heads equal the official run of
# the same CPU exactly (max |diff| 0.0 on each of the two CPUs measured,
# conftest.official_output_sets); with a .contiguous() featmap they were
# 1.0-2.1e-5 off. Layout or numerics errors give >= 1e-3 (see the
# reset-weight case below).


def _parity_model(repo_path, task):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', f'tiny18_{task}.py'))
    return MODELS.build(cfg.model), cfg


def _load_official(model, parity_file, task):
    path = parity_file(f'tiny18_{task}.safetensors')
    state = official_to_package(read_checkpoint(path), task)
    load_state_dict_checked(model, state, source=path)
    return model.eval()


def _max_diff(model, parity_file, task):
    """Max abs difference to the nearest official run (conftest)."""
    io = load_file(parity_file(f'tiny18_{task}_io.safetensors'))
    with torch.no_grad():
        out = model(io['input'], None, mode='tensor')
    return max_diff_to_official(out, task)


@pytest.mark.parametrize('task', TASKS)
def test_tiny18_matches_official(task, parity_file, repo_path):
    model, cfg = _parity_model(repo_path, task)
    _load_official(model, parity_file, task)
    io = load_file(parity_file(f'tiny18_{task}_io.safetensors'))
    assert tuple(io['input'].shape) == tuple(cfg.input_shape)
    diff = _max_diff(model, parity_file, task)
    assert diff <= OFFICIAL_TOLERANCE, f'{task}: max abs diff {diff:.3g}'
    if task == 'pointmap':  # (pointmap, scale), in that order
        out = model(io['input'], None, mode='tensor')
        assert out[0].shape == (1, 3, 256, 192) and out[1].shape == (1, 1)


def test_the_official_runs_differ_by_float32_rounding_only():
    """The two official runs (two CPUs) are within 3e-5 of each other: the
    spread the nearest-run comparison allows, far below a real error."""
    for task in TASKS:
        first, second = official_output_sets(task)
        spread = max((a - b).abs().max().item() for a, b in zip(first, second))
        assert 0 < spread <= 3e-5, (task, spread)


def test_parity_detects_a_wrong_norm_weight(parity_file, repo_path):
    model, _ = _parity_model(repo_path, 'albedo')
    _load_official(model, parity_file, 'albedo')
    with torch.no_grad():
        model.decode_head.conv_layers[4].norm.weight.fill_(1.0)
    assert _max_diff(model, parity_file, 'albedo') > 100 * OFFICIAL_TOLERANCE


@pytest.mark.parametrize('task', TASKS)
def test_state_dict_equals_official_layout(task, parity_file, repo_path):
    model, _ = _parity_model(repo_path, task)
    with open(parity_file('tiny18_tasks_manifest.json')) as f:
        manifest = json.load(f)[task]['keys']
    own = model.state_dict()
    for key, (shape, _) in manifest.items():
        assert list(own[key].shape) == shape, key
    assert ({k for k in own if k.startswith('decode_head.')} ==
            {k for k in manifest if k.startswith('decode_head.')})
    assert set(own) == set(load_file(parity_file(f'tiny18_{task}.safetensors')))


def test_other_task_weights_are_refused(parity_file, repo_path):
    model, _ = _parity_model(repo_path, 'normal')
    state = read_checkpoint(parity_file('tiny18_albedo.safetensors'))
    with pytest.raises(CheckpointMismatchError, match='conv_albedo'):
        load_state_dict_checked(model, state)


# (type, size) -> (in_channels, upsample, conv_out, millions in the reference)
HEAD_SIZES = {
    ('NormalHead', '0.4b'): (1024, (768, 512, 256, 128), (64, 32, 16), 57.9),
    ('NormalHead', '0.8b'): (1280, (768, 512, 256, 128), (64, 32, 16), 70.3),
    ('NormalHead', '1b'): (1536, (768, 512, 256, 128), (64, 32, 16), 83.9),
    ('NormalHead', '5b'): (2432, (1536, 768, 512, 256), (128, 64, 32), 249.5),
    ('PointmapHead', '0.4b'): (1024, (1536, 768, 512, 256), (64, 32, 16),
                               133.2),
    ('PointmapHead', '0.8b'): (1280, (1536, 768, 512, 256), (64, 32, 16),
                               153.1),
    ('PointmapHead', '1b'): (1536, (1536, 768, 512, 256), (64, 32, 16), 174.1),
    ('PointmapHead', '5b'): (2432, (1536, 768, 768, 768), (128, 64, 32),
                             281.4),
    ('AlbedoHead', '0.4b'): (1024, (768, 512, 256, 128), (64, 32, 16), 57.9),
    ('AlbedoHead', '0.8b'): (1280, (768, 512, 256, 128), (64, 32, 16), 70.3),
    ('AlbedoHead', '1b'): (1536, (768, 512, 256, 128), (64, 32, 16), 83.9),
    ('AlbedoHead', '5b'): (2432, (1536, 768, 512, 256), (64, 32, 16), 249.2),
}


@pytest.mark.parametrize('key', sorted(HEAD_SIZES), ids=lambda k: '-'.join(k))
def test_head_parameter_counts_match_reference(key):
    channels, upsample, conv_out, millions = HEAD_SIZES[key]
    with torch.device('meta'):
        head = MODELS.build(dict(type=key[0], in_channels=channels,
                                 upsample_channels=upsample,
                                 conv_out_channels=conv_out))
    count = sum(p.numel() for p in head.parameters())
    assert round(count / 1e6, 1) == millions


def _scale_head(pool):
    return MODELS.build(dict(
        type='PointmapHead', in_channels=8, upsample_channels=(8,),
        conv_out_channels=(4,), conv_kernel_sizes=(3,),
        scale_conv_out_channels=(8, 8, 4), scale_final_layer=(4 * 8 * 6, 16, 1),
        scale_pool_size=pool, loss_decode=[])).eval()


def test_scale_pool_is_identity_at_1024x768_and_runs_at_any_size():
    official, pooled = _scale_head(None), _scale_head((8, 6))
    pooled.load_state_dict(official.state_dict())  # same keys: layout kept
    feat = torch.randn(2, 8, 64, 48)  # the 1024x768 feature grid
    with torch.no_grad():
        assert torch.equal(official.forward_scale(feat),
                           pooled.forward_scale(feat))
        other = torch.randn(2, 8, 40, 30)  # 640x480 input
        assert pooled.forward_scale(other).shape == (2, 1)
        with pytest.raises(ValueError, match='scale_pool_size'):
            official.forward_scale(other)


def test_scale_pool_width_must_fit_the_mlp():
    with pytest.raises(ValueError, match='192 features'):
        MODELS.build(dict(type='PointmapHead', in_channels=8,
                          upsample_channels=(4,), conv_out_channels=(4,),
                          conv_kernel_sizes=(3,),
                          scale_conv_out_channels=(8, 8, 4),
                          scale_final_layer=(100, 1), scale_pool_size=(8, 6)))


def test_albedo_head_uses_channel_rmsnorm_normal_head_instancenorm():
    albedo = MODELS.build(dict(type='AlbedoHead', in_channels=8,
                               upsample_channels=(8, 4), conv_out_channels=(4,),
                               conv_kernel_sizes=(3,)))
    keys = set(albedo.state_dict())
    assert {'input_conv.1.norm.weight', 'upsample_blocks.0.2.norm.weight',
            'upsample_blocks.1.2.norm.weight',
            'conv_layers.1.norm.weight'} <= keys
    x = torch.randn(1, 8, 3, 5)
    norm = albedo.input_conv[1]
    with torch.no_grad():
        norm.norm.weight.copy_(torch.arange(1.0, 9.0))
        ref = x / x.pow(2).mean(1, keepdim=True).add(1e-6).sqrt()
        ref = ref * torch.arange(1.0, 9.0).view(1, -1, 1, 1)
        torch.testing.assert_close(norm(x), ref)
    normal = MODELS.build(dict(type='NormalHead', in_channels=8,
                               upsample_channels=(8,), conv_out_channels=(4,),
                               conv_kernel_sizes=(3,)))
    assert not any('.norm.' in k for k in normal.state_dict())
    assert normal(torch.randn(1, 8, 3, 5)).shape == (1, 3, 6, 10)


# ------------------------------------------------------------------ outputs
def _head(kind, **kwargs):
    return MODELS.build(dict(type=kind, in_channels=8, upsample_channels=(8,),
                             conv_out_channels=(4,), conv_kernel_sizes=(3,),
                             loss_decode=[], **kwargs))


def test_normals_are_unit_after_resize_and_letterbox_removed():
    head = _head('NormalHead', normalize='after_resize')
    out = torch.full((1, 3, 8, 6), 50.0)  # padding rows hold junk
    out[:, :, 1:7] = 0
    out[:, 0, 1:7, 0::2] = 2.0   # columns alternate +x and +y (length 2)
    out[:, 1, 1:7, 1::2] = 2.0
    meta = dict(padding_size=(0, 0, 1, 1), ori_shape=(12, 12))
    fields, _ = head.postprocess_sample(out, 0, meta)
    normal = fields['pred_normal']
    assert normal.shape == (3, 12, 12)
    torch.testing.assert_close(normal.norm(dim=0), torch.ones(12, 12))
    assert normal[2].abs().max() == 0  # the junk padding was cropped


def test_flip_meta_mirrors_back_and_negates_x():
    head = _head('NormalHead')
    out = torch.zeros(1, 3, 4, 4)
    out[:, 0, :, :2] = 1.0  # left half points to +x
    out[:, 2, :, 2:] = 1.0  # right half to +z
    fields, _ = head.postprocess_sample(
        out, 0, dict(flip=True, flip_direction='horizontal', ori_shape=(4, 4)))
    normal = fields['pred_normal']
    assert torch.equal(normal[0, :, 2:], -torch.ones(4, 2))
    assert torch.equal(normal[2, :, :2], torch.ones(4, 2))


def test_pointmap_metric_depth_and_focal_length():
    head = _head('PointmapHead', scale_conv_out_channels=(4,),
                 scale_conv_kernel_sizes=(1,), scale_final_layer=(4, 1),
                 scale_pool_size=(1, 1))
    canonical = torch.tensor([1.0, 2.0, 4.0]).view(1, 3, 1, 1).expand(
        1, 3, 8, 6).clone()
    scale = torch.tensor([[0.5]])
    meta = dict(padding_size=(0, 0, 1, 1), ori_shape=(12, 12),
                scale_factor=(0.5, 0.5))
    fields, info = head.postprocess_sample((canonical, scale), 0, meta)
    assert fields['pred_pointmap'].shape == (3, 12, 12)
    torch.testing.assert_close(fields['pred_pointmap'][:, 3, 3],
                               torch.tensor([2.0, 4.0, 8.0]))
    assert torch.equal(fields['pred_depth'], fields['pred_pointmap'][2:3])
    assert info['pred_scale'] == 0.5
    assert info['pred_focal_length'] == pytest.approx(768 / (0.5 * 0.5))
    # Without scale_factor r comes from the unpadded width: 6 / 12.
    meta.pop('scale_factor')
    _, info = head.postprocess_sample((canonical, scale), 0, meta)
    assert info['pred_focal_length'] == pytest.approx(3072.0)


@pytest.mark.parametrize('bad', [0.0, -0.2, float('nan')])
def test_non_positive_scale_is_refused_or_clamped(bad):
    kwargs = dict(scale_conv_out_channels=(4,), scale_conv_kernel_sizes=(1,),
                  scale_final_layer=(4, 1), scale_pool_size=(1, 1))
    outputs = (torch.ones(1, 3, 4, 4), torch.tensor([[bad]]))
    meta = dict(img_path='person.png', ori_shape=(4, 4))
    with pytest.raises(ValueError, match='person.png'):
        _head('PointmapHead', **kwargs).postprocess_sample(outputs, 0, meta)
    head = _head('PointmapHead', scale_guard='clamp', min_scale=0.01, **kwargs)
    fields, info = head.postprocess_sample(outputs, 0, meta)
    assert info['pred_scale'] == 0.01
    assert torch.equal(fields['pred_depth'], torch.full((1, 4, 4), 100.0))
    with pytest.raises(ValueError, match='scale_guard'):
        _head('PointmapHead', scale_guard='ignore', **kwargs)


def test_albedo_is_clamped_for_output_and_raw_kept():
    out = torch.tensor([-0.5, 0.25, 1.5]).view(1, 3, 1, 1).expand(
        1, 3, 2, 2).clone()
    fields, _ = _head('AlbedoHead').postprocess_sample(out, 0, {})
    assert torch.equal(fields['pred_albedo'][:, 0, 0],
                       torch.tensor([0.0, 0.25, 1.0]))
    assert torch.equal(fields['pred_albedo_raw'], out[0])
    fields, _ = _head('AlbedoHead', clamp_output=False).postprocess_sample(
        out, 0, {})
    assert set(fields) == {'pred_albedo'} and fields['pred_albedo'].min() < 0


def test_bad_padding_is_reported():
    with pytest.raises(ValueError, match='padding_size'):
        _head('NormalHead').postprocess_sample(
            torch.zeros(1, 3, 4, 4), 0, dict(padding_size=(2, 2, 0, 0)))


@pytest.mark.parametrize('task', TASKS)
def test_full_size_heads_reach_1024x768(task):
    from sapiens2_mm.apis.tasks import get_task
    kind = get_task(task).head_types[0]
    with torch.device('meta'):
        head = MODELS.build(dict(type=kind, in_channels=1536))
        out = head(torch.empty(2, 1536, 64, 48))  # 1b feature of 1024x768
    out = out if isinstance(out, tuple) else (out,)
    assert out[0].shape == (2, 3, 1024, 768)
    if task == 'pointmap':
        assert out[1].shape == (2, 1)


def test_official_scale_branch_is_tied_to_1024x768_unless_pooled():
    with torch.device('meta'):
        official = MODELS.build(dict(type='PointmapHead', in_channels=1536))
        pooled = MODELS.build(dict(type='PointmapHead', in_channels=1536,
                                   scale_pool_size=(8, 6)))
        feat_640 = torch.empty(1, 1536, 40, 30)  # 640x480 input
        with pytest.raises(ValueError, match='2560 features'):
            official.forward_scale(feat_640)
        assert pooled.forward_scale(feat_640).shape == (1, 1)


def test_memory_layouts_are_the_official_ones(parity_file, repo_path):
    """The backbone returns the official permuted (channels-last) view of
    its tokens, and the albedo RMS norms return NCHW-contiguous maps: the
    layouts that make the heads' float32 kernels the official ones. The
    faster 'channels_last' norm layout is the option, not the default."""
    model, _ = _parity_model(repo_path, 'albedo')
    _load_official(model, parity_file, 'albedo')
    io = load_file(parity_file('tiny18_albedo_io.safetensors'))
    with torch.no_grad():
        feat = model.extract_feat(io['input'])[0]
        assert feat.shape == (1, 32, 8, 6) and not feat.is_contiguous()
        assert feat.is_contiguous(memory_format=torch.channels_last)
        norm = model.decode_head.input_conv[1]
        assert norm.layout == 'official' and norm(feat).is_contiguous()
    fast = _fast_albedo(repo_path)
    _load_official(fast, parity_file, 'albedo')
    with torch.no_grad():
        out = fast(io['input'], None, mode='tensor')
    # the same function, other float32 kernels: close, not identical
    assert 0 < (out - io['output_0']).abs().max().item() < 1e-3
    with pytest.raises(ValueError, match='norm_layout'):
        _fast_albedo(repo_path, 'nchw')


def _fast_albedo(repo_path, layout='channels_last'):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', 'tiny18_albedo.py'))
    cfg.model.decode_head.norm_layout = layout
    return MODELS.build(cfg.model)
