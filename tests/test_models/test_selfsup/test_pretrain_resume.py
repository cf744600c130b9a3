"""4 iterations straight equal 2 + save + resume + 2 (exactly, on CPU)."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

CONFIG = osp.join(osp.dirname(__file__), '..', '..', '..', 'configs',
                  'pretrain', 'sapiens2-tiny_pretrain-cpu-64x48.py')
DATA = osp.join(osp.dirname(__file__), '..', '..', 'data')


def _cfg(work_dir, max_iters, resume=None):
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = str(work_dir)
    cfg.train_dataloader.batch_size = 2
    cfg.train_dataloader.dataset.data_root = DATA
    cfg.train_dataloader.dataset.folders = ['coco_sample']
    # Centering mode so that the centre buffer is part of what must resume.
    cfg.model.dino_loss.teacher_norm = 'centering'
    # Schedules fixed to a 4-iteration run, whatever max_iters this part has.
    cfg.param_scheduler = [
        dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0,
             end=2),
        dict(type='CosineAnnealingLR', eta_min=1e-5, by_epoch=False, begin=2,
             end=4, T_max=2)]
    cfg.custom_hooks[0].update(momentum_iters=4, teacher_temp_warmup_iters=3,
                               freeze_prototypes_iters=1)
    cfg.train_cfg.max_iters = max_iters
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=2,
                                        by_epoch=False)
    cfg.default_hooks.logger.interval = 1
    cfg.log_level = 'WARNING'
    if resume:
        cfg.resume, cfg.load_from = True, resume
    return cfg


def _train(cfg):
    runner = Runner.from_cfg(cfg)
    runner.train()
    return runner


@pytest.mark.slow
def test_resume_equals_straight_run(tmp_path):
    straight = _train(_cfg(tmp_path / 'a', 4))
    first = _train(_cfg(tmp_path / 'b', 2))
    ckpt = osp.join(first.work_dir, 'iter_2.pth')
    assert osp.isfile(ckpt)
    resumed = _train(_cfg(tmp_path / 'b', 4, resume=ckpt))
    want, got = straight.model.state_dict(), resumed.model.state_dict()
    assert want.keys() == got.keys()
    assert any(k.startswith('teacher.module.') for k in want)
    assert 'dino_loss.center' in want and want['dino_loss.center'].abs().sum()
    for key in want:
        assert torch.equal(want[key], got[key]), key
    opt_a = straight.optim_wrapper.optimizer.state_dict()['state']
    opt_b = resumed.optim_wrapper.optimizer.state_dict()['state']
    for index in opt_a:
        for name in ('exp_avg', 'exp_avg_sq'):
            assert torch.equal(opt_a[index][name], opt_b[index][name])
    # Schedules: the last logged values agree too.
    for key in ('train/teacher_momentum', 'train/teacher_temp', 'train/lr'):
        assert straight.message_hub.get_scalar(key).current() == \
            resumed.message_hub.get_scalar(key).current()
    assert resumed.model.teacher.steps.item() == 5  # copy + 4 updates
