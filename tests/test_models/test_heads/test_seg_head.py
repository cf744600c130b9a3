"""SegHead: official parity, key layout, head sizes, losses, flip test."""
import json

import pytest
import torch
from mmengine.config import Config, ConfigDict
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
from tests.conftest import OFFICIAL_TOLERANCE, max_diff_to_official


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
    diff = max_diff_to_official(out, 'seg')
    assert diff <= OFFICIAL_TOLERANCE, f'max abs diff {diff:.3g}'


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


def _four_k_shaped_segmentor():
    """Tokenizer backbone (stride 64) and five deconvs: logits at half the
    256x192 input, as the 4K configs (4096x3072 -> 2048x1536)."""
    cfg = dict(
        type='mmseg.EncoderDecoder',
        data_preprocessor=dict(type='mmseg.SegDataPreProcessor',
                               mean=[0, 0, 0], std=[1, 1, 1]),
        backbone=dict(type='Sapiens2', arch=dict(
            embed_dims=32, num_layers=2, num_heads=2,
            feedforward_channels=64, num_tokenizer_layers=1),
            img_size=(256, 192), use_tokenizer=True, out_type='featmap',
            out_indices=[-1], init_cfg=None),
        decode_head=dict(type='SegHead', in_channels=32,
                         deconv_out_channels=(16, 16, 8, 8, 8),
                         deconv_kernel_sizes=(4, 4, 4, 4, 4),
                         conv_out_channels=(8, ), conv_kernel_sizes=(1, )),
        test_cfg=dict(mode='whole'))
    torch.manual_seed(0)
    model = MODELS.build(ConfigDict(cfg)).eval()
    model.init_weights()
    return model


def test_half_resolution_logits_are_resized_once_to_the_original_size():
    """No padding: the 128x96 logits go straight to the 100x70 original
    size (mmseg's predict_by_feat would first upsample them to the 256x192
    input and then resize a second time)."""
    model = _four_k_shaped_segmentor()
    x = torch.randn(1, 3, 256, 192)
    sample = SegDataSample(metainfo=dict(ori_shape=(100, 70),
                                         img_shape=(256, 192)))
    with torch.no_grad():
        raw = model._forward(x)
        result, = model.predict(x, [sample])
    assert raw.shape == (1, 29, 128, 96)
    expected = torch.nn.functional.interpolate(
        raw, size=(100, 70), mode='bilinear', align_corners=False)[0]
    torch.testing.assert_close(result.seg_logits.data, expected)
    assert torch.equal(result.pred_sem_seg.data[0], expected.argmax(0))


def test_padded_inputs_keep_mmseg_resize_to_the_input_size():
    model = _four_k_shaped_segmentor()
    x = torch.randn(1, 3, 256, 192)
    metas = [dict(img_shape=(256, 192), padding_size=[0, 0, 8, 8])]
    with torch.no_grad():
        logits = model.decode_head.predict(model.extract_feat(x), metas,
                                           model.test_cfg)
    assert logits.shape == (1, 29, 256, 192)
    metas = [dict(img_shape=(256, 192), padding_size=[0, 0, 0, 0])]
    with torch.no_grad():
        logits = model.decode_head.predict(model.extract_feat(x), metas,
                                           model.test_cfg)
    assert logits.shape == (1, 29, 128, 96)
