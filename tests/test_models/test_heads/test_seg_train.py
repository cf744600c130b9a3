"""A short CPU training run of the tiny config on the bundled sample."""
import glob
import os.path as osp

import numpy as np
import pytest
from mmengine.config import Config
from mmengine.runner import Runner

from tests.conftest import REPO_DIR


@pytest.mark.slow
def test_tiny_training_lowers_loss_and_raises_miou(tmp_path):
    path, = glob.glob(osp.join(REPO_DIR, 'configs', 'seg', 'sapiens2-tiny_*.py'))
    cfg = Config.fromfile(path)
    cfg.work_dir = str(tmp_path)
    cfg.log_level = 'WARNING'
    root = osp.join(REPO_DIR, 'tests', 'data', 'seg_sample')
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        cfg[loader].dataset.data_root = root
    runner = Runner.from_cfg(cfg)
    runner.model.init_weights()  # train() then keeps these weights
    before = runner.val()
    runner.train()
    after = runner.val()
    losses = runner.message_hub.get_scalar('train/loss').data[0]
    assert len(losses) == cfg.train_cfg.max_iters
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.9 * np.mean(losses[:5])
    # Evaluated on the training images at their original label resolution.
    assert after['mIoU'] > before['mIoU'] + 1.0
    assert after['mAcc'] > before['mAcc']
    assert osp.isfile(osp.join(tmp_path, f'iter_{cfg.train_cfg.max_iters}.pth'))
