"""SegHead: official parity, key layout, head sizes, losses, flip test."""
import json

import pytest
import torch
from mmengine.config import Config
from mmengine.model import BaseModel
from mmengine.structures import PixelData
from mmseg.structures import SegDataSample
from safetensors.torch import load_file

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils import (
    CheckpointMismatchError,
    load_state_dict_checked,
    read_checkpoint,
)

TOLERANCE = 1e-5


def _parity_model(repo_path):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', 'tiny18_seg.py'))
    return MODELS.build(cfg.model), cfg


def test_tiny18_seg_matches_official(parity_file, repo_path):
    model, cfg = _parity_model(repo_path)
    # The user path for an official .safetensors task checkpoint.
    path = parity_file('tiny18_seg.safetensors')
    load_state_dict_checked(model, read_checkpoint(path), source=path)
    model.eval()
    io = load_file(parity_file('tiny18_seg_io.safetensors'))
    assert tuple(io['input'].shape) == tuple(cfg.input_shape)
    with torch.no_grad():
        out = model(io['input'], mode='tensor')
    assert out.shape == io['output_0'].shape == (1, 29, 128, 96)
    diff = (out - io['output_0']).abs().max().item()
    assert diff <= TOLERANCE, f'max abs diff {diff:.3g} > {TOLERANCE}'


def test_state_dict_matches_official_layout(parity_file, repo_path):
    model, _ = _parity_model(repo_path)
    with open(parity_file('tiny18_tasks_manifest.json')) as f:
        manifest = json.load(f)['seg']['keys']
    own = model.state_dict()
    for key, (shape, _) in manifest.items():
        assert key in own, key
        assert list(own[key].shape) == shape, key
    head_keys = {k for k in own if k.startswith('decode_head.')}
    assert head_keys == {k for k in manifest if k.startswith('decode_head.')}
    official = load_file(parity_file('tiny18_seg.safetensors'))
    assert set(own) == set(official)


def test_wrong_head_checkpoint_is_refused(parity_file, repo_path):
    cfg = Config.fromfile(
        repo_path('tests', 'configs', 'parity', 'tiny18_seg.py'))
    cfg.model.decode_head.deconv_out_channels = (32, 16, 16, 16)
    model = MODELS.build(cfg.model)
    with pytest.raises(CheckpointMismatchError, match='deconv_layers.9'):
        load_state_dict_checked(
            model, read_checkpoint(parity_file('tiny18_seg.safetensors')))


@pytest.mark.parametrize('in_channels,millions', [(1024, 11.15), (1280, 13.25),
                                                  (1536, 15.35), (2432, 22.69)])
def test_head_parameter_counts_match_reference(in_channels, millions):
    head = MODELS.build(dict(type='SegHead', in_channels=in_channels))
    count = sum(p.numel() for p in head.parameters())
    assert round(count / 1e6, 2) == millions


def test_head_upsamples_16x_and_has_no_norm_params():
    head = MODELS.build(dict(type='SegHead', in_channels=32,
                             deconv_out_channels=(16, 16, 8, 8),
                             conv_out_channels=(8, 8)))
    out = head((torch.randn(2, 32, 4, 3), ))
    assert out.shape == (2, 29, 64, 48)
    assert all('norm' not in k for k in head.state_dict())
    assert head.dropout is None


def test_head_rejects_mismatched_settings():
    with pytest.raises(ValueError, match='deconv_kernel_sizes'):
        MODELS.build(dict(type='SegHead', in_channels=8,
                          deconv_out_channels=(8, 8),
                          deconv_kernel_sizes=(4, )))
    with pytest.raises(ValueError, match='kernel size 5'):
        MODELS.build(dict(type='SegHead', in_channels=8,
                          deconv_out_channels=(8, ),
                          deconv_kernel_sizes=(5, )))


def test_head_losses_reproduce_official(repo_path):
    """Config loss list + mmengine's parse_losses give the official values."""
    cfg = Config.fromfile(
        repo_path('configs', 'seg', '_base_', 'sapiens2-seg29.py'))
    head_cfg = dict(cfg.model.decode_head, in_channels=8,
                    deconv_out_channels=(8, ), deconv_kernel_sizes=(4, ),
                    conv_out_channels=(8, ), conv_kernel_sizes=(1, ))
    head = MODELS.build(head_cfg)
    data = load_file(repo_path('tests', 'data', 'official_losses',
                               'loss_seg.safetensors'))
    with open(repo_path('tests', 'data', 'official_losses',
                        'loss_manifest.json')) as f:
        expected = json.load(f)['seg']['losses']
    samples = [SegDataSample(gt_sem_seg=PixelData(data=gt))
               for gt in data['gt_seg']]
    losses = head.loss_by_feat(data['pred'], samples)
    assert set(losses) == {'loss_ce', 'loss_dice', 'acc_seg'}
    total, log_vars = BaseModel.parse_losses(None, losses)
    for name, value in expected.items():
        assert log_vars[name].item() == pytest.approx(value, rel=1e-5), name
    assert total.item() == pytest.approx(
        expected['loss_ce'] + expected['loss_dice'], rel=1e-5)


def test_config_class_weight_matches_metainfo(repo_path):
    cfg = Config.fromfile(
        repo_path('configs', 'seg', '_base_', 'sapiens2-seg29.py'))
    ce = cfg.model.decode_head.loss_decode[0]
    assert ce['type'] == 'mmseg.CrossEntropyLoss'
    assert ce['class_weight'] == seg29_metainfo()['class_weight']
