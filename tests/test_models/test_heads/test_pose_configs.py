"""Pose configs: official recipe per size, meta-device builds, tiny training."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.registry import MODELS

RECIPE = {  # size: (L, layer decay, clip, iters, lr, head in, deconv, conv)
    '0.4b': (24, 0.8, 2.0, 10000, 5e-4, 1024, (1024, 768), (512, 512, 256)),
    '0.8b': (32, 0.85, 4.0, 10000, 5e-4, 1280, (1024, 768), (512, 512, 256)),
    '1b': (40, 0.9, 4.0, 20000, 5e-4, 1536, (1536, 1024), (768, 512, 256)),
    '5b': (56, 0.94, 4.0, 20000, 1e-4, 2432, (1024, 768), (512, 512, 256)),
}
KEYPOINTS = {'sapiens308': 308, 'coco': 17, 'coco-wholebody': 133}


def _configs(repo_path):
    return sorted(glob.glob(repo_path('configs', 'pose', 'sapiens2-*.py')))


def test_every_size_and_layout_exists(repo_path):
    names = {osp.basename(p) for p in _configs(repo_path)}
    for size in RECIPE:
        assert any(n.startswith(f'sapiens2-{size}_') and 'sapiens308' in n
                   for n in names), size
    for size in ('0.4b', '1b'):
        for layout in ('coco-1024x768', 'coco-wholebody-1024x768'):
            assert any(n.startswith(f'sapiens2-{size}_') and
                       n.endswith(f'_{layout}.py') for n in names)


@pytest.mark.parametrize('size', list(RECIPE))
def test_official_recipe(size, repo_path):
    L, rate, clip, iters, lr, c, deconv, conv = RECIPE[size]
    for path in _configs(repo_path):
        if not osp.basename(path).startswith(f'sapiens2-{size}_'):
            continue
        cfg = Config.fromfile(path)
        layout = osp.basename(path).split('_')[-1].rsplit('-', 1)[0]
        assert cfg.default_scope == 'sapiens2_mm'
        ow = cfg.optim_wrapper
        assert ow.type == 'AmpOptimWrapper' and ow.dtype == 'bfloat16'
        assert ow.constructor == 'Sapiens2LayerDecayOptimWrapperConstructor'
        assert ow.paramwise_cfg == dict(num_layers=L, layer_decay_rate=rate)
        assert ow.optimizer.type == 'AdamW' and ow.optimizer.lr == lr
        assert ow.optimizer.weight_decay == 0.1
        assert ow.clip_grad.max_norm == clip
        assert cfg.train_cfg.max_iters == iters
        warm, poly = cfg.param_scheduler
        assert (warm.type, warm.start_factor, warm.end) == ('LinearLR', 1e-3,
                                                            500)
        assert (poly.type, poly.power, poly.begin, poly.end) == ('PolyLR', 1.0,
                                                                 500, iters)
        head = cfg.model.head
        assert head.out_channels == KEYPOINTS[layout]
        assert (head.in_channels, tuple(head.deconv_out_channels),
                tuple(head.conv_out_channels)) == (c, deconv, conv)
        assert head.decoder.sigma == 6 and head.decoder.blur_kernel_size == 11
        assert tuple(head.decoder.heatmap_size) == (192, 256)
        assert cfg.model.backbone.arch == f'sapiens2_{size}'
        assert cfg.model.test_cfg.flip_test is True
        assert cfg.model.test_cfg.shift_heatmap is False


@pytest.mark.parametrize('size', ['0.4b', '1b'])
def test_builds_on_meta_device(size, repo_path):
    path = repo_path('configs', 'pose',
                     f'sapiens2-{size}_8xb{6 if size == "0.4b" else 7}-'
                     f'{"10k" if size == "0.4b" else "20k"}_sapiens308-1024x768.py')
    cfg = Config.fromfile(path)
    cfg.model.backbone.init_cfg = None
    with torch.device('meta'):
        model = MODELS.build(cfg.model)
    head = sum(p.numel() for p in model.head.parameters())
    assert head == {'0.4b': 30_226_996, '1b': 64_305_972}[size]


def test_308_val_evaluator_is_the_308_metric(repo_path):
    from sapiens2_mm.registry import METRICS
    cfg = Config.fromfile(repo_path(
        'configs', 'pose', 'sapiens2-1b_8xb7-20k_sapiens308-1024x768.py'))
    assert cfg.val_evaluator.type == 'Keypoints308Metric'
    assert METRICS.get(cfg.val_evaluator.type) is not None
