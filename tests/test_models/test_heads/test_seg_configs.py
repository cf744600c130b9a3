"""Every config in configs/seg builds and carries the official recipe."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper

from sapiens2_mm.registry import MODELS
from tests.conftest import REPO_DIR

SEG_CONFIGS = sorted(glob.glob(osp.join(REPO_DIR, 'configs', 'seg', '*.py')))
# size: (embed dims, layers, decay rate, clip, iters, per-GPU batch, bf16)
OFFICIAL = {
    '0.4b': (1024, 24, 0.8, 2.0, 20000, 12, True),
    '0.8b': (1280, 32, 0.85, 4.0, 30000, 5, False),
    '1b': (1536, 40, 0.9, 4.0, 20000, 8, True),
    '5b': (2432, 56, 0.94, 4.0, 50000, 2, True),
}


def test_one_config_per_official_size_and_a_tiny_one():
    names = [osp.basename(p) for p in SEG_CONFIGS]
    for size in OFFICIAL:
        assert any(n.startswith(f'sapiens2-{size}_') and
                   n.endswith('_seg29-1024x768.py') for n in names), size
    assert any('tiny' in n for n in names)


@pytest.mark.parametrize('size', sorted(OFFICIAL))
def test_official_size_config(size):
    path, = [p for p in SEG_CONFIGS
             if osp.basename(p).startswith(f'sapiens2-{size}_')]
    cfg = Config.fromfile(path)
    dims, layers, rate, clip, iters, batch, bf16 = OFFICIAL[size]
    assert cfg.default_scope == 'sapiens2_mm'
    assert cfg.model.type == 'mmseg.EncoderDecoder'
    assert cfg.model.backbone.arch == f'sapiens2_{size}'
    assert cfg.model.decode_head.in_channels == dims
    assert cfg.model.decode_head.deconv_out_channels == (512, 256, 128, 64)
    optim = cfg.optim_wrapper
    assert optim.constructor == 'Sapiens2LayerDecayOptimWrapperConstructor'
    assert optim.optimizer.type == 'AdamW' and optim.optimizer.lr == 5e-4
    assert optim.optimizer.weight_decay == 0.1
    assert optim.paramwise_cfg == dict(num_layers=layers,
                                       layer_decay_rate=rate)
    assert optim.clip_grad.max_norm == clip
    assert (optim.type == 'AmpOptimWrapper') == bf16
    if bf16:
        assert optim.dtype == 'bfloat16'
    assert cfg.train_cfg.max_iters == iters
    assert cfg.train_dataloader.batch_size == batch
    warmup, poly = cfg.param_scheduler
    assert (warmup.type, warmup.start_factor, warmup.end) == ('LinearLR', 1e-3,
                                                              500)
    assert (poly.type, poly.power, poly.begin, poly.end) == ('PolyLR', 1.0,
                                                             500, iters)
    assert cfg.val_evaluator.type == 'SegIoUMetric'
    assert cfg.val_evaluator.nan_to_num == 0.0
    # Build the whole model without memory (weights are not initialized).
    cfg.model.backbone.init_cfg = None
    with torch.device('meta'):
        model = MODELS.build(cfg.model)
    assert len(model.backbone.blocks) == layers
    assert model.decode_head.deconv_layers[0].weight.shape[:2] == (dims, 512)


def test_tiny_config_builds_model_and_optimizer(repo_path):
    path, = [p for p in SEG_CONFIGS
             if osp.basename(p).startswith('sapiens2-tiny_')]
    cfg = Config.fromfile(path)
    model = MODELS.build(cfg.model)
    model.init_weights()
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    lrs = sorted({g['lr'] for g in wrapper.optimizer.param_groups})
    assert max(lrs) == pytest.approx(cfg.optim_wrapper.optimizer.lr)
    assert min(lrs) == pytest.approx(cfg.optim_wrapper.optimizer.lr * 0.9**5)
    out = model(torch.randn(1, 3, 128, 96), mode='tensor')
    assert out.shape == (1, 29, 128, 96)
