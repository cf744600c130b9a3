"""The linear probe trains its head on an exported, frozen pretrained backbone."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils.pretrain_export import export_pretrain
from tests.test_models.test_selfsup.test_sapiens2_pretrainer import (
    tiny_pretrainer_cfg,
)

REPO = osp.join(osp.dirname(__file__), '..', '..', '..')
CONFIG = osp.join(REPO, 'configs', 'pretrain',
                  'sapiens2-tiny_linear-probe_seg29sample-128x96.py')


@pytest.mark.slow
def test_linear_probe_on_exported_backbone(tmp_path):
    model = MODELS.build(tiny_pretrainer_cfg())
    model.init_weights()
    ckpt = tmp_path / 'iter_1.pth'
    torch.save(dict(state_dict=model.state_dict()), ckpt)
    exported = str(tmp_path / 'sapiens2_tiny_pretrain.safetensors')
    export_pretrain(str(ckpt), exported)

    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = str(tmp_path / 'probe')
    cfg.model.backbone.init_cfg.checkpoint = exported
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        loader.dataset.data_root = osp.join(REPO, 'tests', 'data',
                                            'seg_sample')
    cfg.train_cfg.max_iters, cfg.train_cfg.val_interval = 8, 1000
    cfg.param_scheduler = []
    cfg.default_hooks.logger.interval = 1
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1000)
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    runner.train()
    trained = runner.model.state_dict()
    for key, value in load_file(exported).items():  # frozen backbone
        assert torch.equal(trained[f'backbone.{key}'], value.to(
            trained[f'backbone.{key}'].dtype)), key
    assert not runner.model.backbone.blocks[0].attn.wq.weight.requires_grad
    losses, _ = runner.message_hub.get_scalar('train/loss').data
    assert losses[-1] < losses[0], losses
