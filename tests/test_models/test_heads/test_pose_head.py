"""PoseHeatmapHead: official parity, key layout, loss, flip test, errors."""
import json

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.structures import InstanceData, PixelData
from mmpose.structures import PoseDataSample
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils import (
    load_state_dict_checked,
    official_to_package,
    read_checkpoint,
)
from tests.conftest import OFFICIAL_TOLERANCE, max_diff_to_official


def _tiny18_pose(repo_path):
    cfg = Config.fromfile(repo_path('tests', 'configs', 'parity',
                                    'tiny18_pose.py'))
    return MODELS.build(cfg.model), cfg


def _load_official(model, parity_file):
    """The user path for official sapiens2_*_pose.safetensors files."""
    path = parity_file('tiny18_pose.safetensors')
    state = official_to_package(read_checkpoint(path), 'pose')
    load_state_dict_checked(model, state, source=path)


def test_tiny18_pose_matches_official(parity_file, repo_path):
    model, cfg = _tiny18_pose(repo_path)
    _load_official(model, parity_file)
    model.eval()
    io = load_file(parity_file('tiny18_pose_io.safetensors'))
    assert tuple(io['input'].shape) == tuple(cfg.input_shape)
    with torch.no_grad():
        out = model(io['input'], None, mode='tensor')
    assert out.shape == io['output_0'].shape == (1, 308, 32, 24)
    diff = max_diff_to_official(out, 'pose')
    assert diff <= OFFICIAL_TOLERANCE, f'max abs diff {diff:.3g}'


def test_official_keys_are_head_keys(parity_file, repo_path):
    """Every official decode_head.* key exists under head.* with its shape."""
    model, _ = _tiny18_pose(repo_path)
    with open(parity_file('tiny18_tasks_manifest.json')) as f:
        manifest = json.load(f)['pose']['keys']
    own = model.state_dict()
    head_keys = {k: v for k, v in manifest.items()
                 if k.startswith('decode_head.')}
    assert len(head_keys) == 10
    for key, (shape, _) in head_keys.items():
        ours = 'head.' + key[len('decode_head.'):]
        assert tuple(own[ours].shape) == tuple(shape), key
    assert {k for k in own if k.startswith('head.')} == {
        'head.' + k[len('decode_head.'):] for k in head_keys}


def test_unrenamed_official_state_dict_is_refused(parity_file, repo_path):
    model, _ = _tiny18_pose(repo_path)
    raw = read_checkpoint(parity_file('tiny18_pose.safetensors'))
    with pytest.raises(Exception, match='decode_head'):
        load_state_dict_checked(model, raw)


@pytest.mark.parametrize('arch,channels,expected', [
    ('0.4b', (1024, (1024, 768), (512, 512, 256)), 30_226_996),
    ('1b', (1536, (1536, 1024), (768, 512, 256)), 64_305_972),
    ('5b', (2432, (1024, 768), (512, 512, 256)), 53_295_668),
])
def test_head_parameter_count_matches_reference(arch, channels, expected):
    in_ch, deconv, conv = channels
    with torch.device('meta'):
        head = MODELS.build(dict(
            type='PoseHeatmapHead', in_channels=in_ch, out_channels=308,
            deconv_out_channels=deconv, conv_out_channels=conv))
    assert sum(p.numel() for p in head.parameters()) == expected
    assert head.deconv_layers[0].bias is None
    assert isinstance(head.deconv_layers[1], torch.nn.InstanceNorm2d)
    assert not head.deconv_layers[1].affine


def _samples(n, k, h, w, flip_indices=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(n):
        s = PoseDataSample(metainfo=dict(
            flip_indices=flip_indices or list(range(k)), input_size=(w * 4, h * 4)))
        s.gt_fields = PixelData(heatmaps=torch.rand(k, h, w, generator=g))
        s.gt_instance_labels = InstanceData(
            keypoint_weights=(torch.rand(1, k, generator=g) > 0.3).float())
        samples.append(s)
    return samples


def test_loss_is_official_weighted_mse(repo_path):
    head = MODELS.build(dict(type='PoseHeatmapHead', in_channels=8,
                             out_channels=5, deconv_out_channels=(8, ),
                             deconv_kernel_sizes=(4, ), conv_out_channels=(8, ),
                             conv_kernel_sizes=(1, )))
    feats = (torch.randn(2, 8, 4, 3), )
    samples = _samples(2, 5, 8, 6)
    losses = head.loss(feats, samples)
    pred = head(feats)
    gt = torch.stack([s.gt_fields.heatmaps for s in samples])
    w = torch.cat([s.gt_instance_labels.keypoint_weights for s in samples])
    expected = 10 * (((pred - gt) ** 2) * w[:, :, None, None]).mean()
    torch.testing.assert_close(losses['loss_kpt'], expected)
    assert 0 <= losses['acc_pose'].item() <= 1


def test_flip_test_averages_mirrored_permuted_heatmaps():
    head = MODELS.build(dict(
        type='PoseHeatmapHead', in_channels=8, out_channels=4,
        deconv_out_channels=(8, ), deconv_kernel_sizes=(4, ),
        conv_out_channels=(8, ), conv_kernel_sizes=(1, ),
        decoder=dict(type='Sapiens2UDPHeatmap', input_size=(24, 32),
                     heatmap_size=(6, 8), sigma=1)))
    head.eval()
    feats, feats_flip = (torch.randn(2, 8, 4, 3), ), (torch.randn(2, 8, 4, 3), )
    flip = [1, 0, 3, 2]
    samples = _samples(2, 4, 8, 6, flip_indices=flip)
    _, fields = head.predict([feats, feats_flip], samples,
                             dict(flip_test=True, output_heatmaps=True))
    a, b = head(feats), head(feats_flip)
    expected = (a + b.flip(-1)[:, flip]) * 0.5
    torch.testing.assert_close(torch.stack([f.heatmaps for f in fields]),
                               expected)
    preds = head.predict([feats, feats_flip], samples, dict(flip_test=True))
    kp, _ = head.decoder.decode(expected[0].detach().numpy())
    np.testing.assert_allclose(preds[0].keypoints, kp, atol=1e-5)


def test_flip_test_errors():
    head = MODELS.build(dict(
        type='PoseHeatmapHead', in_channels=8, out_channels=4,
        deconv_out_channels=(8, ), deconv_kernel_sizes=(4, ),
        conv_out_channels=(8, ), conv_kernel_sizes=(1, ),
        decoder=dict(type='Sapiens2UDPHeatmap', input_size=(24, 32),
                     heatmap_size=(6, 8), sigma=1)))
    feats = (torch.randn(1, 8, 4, 3), )
    with pytest.raises(ValueError, match='flip_indices of length 4'):
        head.predict([feats, feats], _samples(1, 4, 8, 6, flip_indices=[0, 1]),
                     dict(flip_test=True))
    with pytest.raises(ValueError, match='flipped_feats'):
        head.predict(feats, _samples(1, 4, 8, 6), dict(flip_test=True))


def test_bad_head_arguments():
    with pytest.raises(ValueError, match='deconv kernel size 5'):
        MODELS.build(dict(type='PoseHeatmapHead', in_channels=8,
                          out_channels=4, deconv_out_channels=(8, ),
                          deconv_kernel_sizes=(5, )))
    with pytest.raises(ValueError, match='same length'):
        MODELS.build(dict(type='PoseHeatmapHead', in_channels=8,
                          out_channels=4, conv_out_channels=(8, 8),
                          conv_kernel_sizes=(1, )))
