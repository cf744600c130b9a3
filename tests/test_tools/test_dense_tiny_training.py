"""The tiny dense configs train, test and draw end to end on the bundled data.

Per task: tools/train.py (in this process) lowers the loss, and tools/test.py
scores the trained checkpoint better than the untrained model on the main
metric, writing one ``[image | prediction]`` drawing per image with
``--show-dir``.
"""
import os
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from tests.conftest import REPO_DIR, load_tool
from tests.test_apis.tiny_configs import tiny_config

train_tool = load_tool('train')
test_tool = load_tool('test')

# task -> (main metric, lower is better)
MAIN_METRIC = {'normal': 'normal_mae', 'pointmap': 'l2_mean',
               'albedo': 'mae'}
NUM_IMAGES = 4  # tests/data/dense_sample


# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _untrained_checkpoint(cfg_path, path):
    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(cfg_path).model)
    model.init_weights()
    torch.save({'state_dict': model.state_dict()}, path)
    return path


def _losses(runner):
    values, _ = runner.message_hub.get_scalar('train/loss').data
    return np.asarray(values, np.float64)


@pytest.mark.slow
@pytest.mark.parametrize('task', sorted(MAIN_METRIC))
def test_tiny_dense_config_learns_and_tests(task, tmp_path):
    cfg_path = tiny_config(task)
    metric = MAIN_METRIC[task]
    work = str(tmp_path / 'train')
    runner = train_tool.main([cfg_path, '--work-dir', work, '--cfg-options',
                              f'experiment_name={task}_dense_tiny_train'])
    losses = _losses(runner)
    max_iters = Config.fromfile(cfg_path).train_cfg.max_iters
    assert len(losses) == max_iters and np.isfinite(losses).all()
    assert losses[-5:].mean() < 0.8 * losses[:5].mean(), losses
    ckpt = osp.join(work, f'iter_{max_iters}.pth')
    assert osp.isfile(ckpt)

    # An untrained scale MLP may output s <= 0, which the pointmap head
    # refuses by default; clamped, the canonical map (what l2_mean scores,
    # metric x s) is unchanged.
    guard = ['model.decode_head.scale_guard=clamp'] if task == 'pointmap' \
        else []
    before = test_tool.main([
        cfg_path, _untrained_checkpoint(cfg_path, str(tmp_path / 'init.pth')),
        '--work-dir', str(tmp_path / 'test0'), '--cfg-options',
        f'experiment_name={task}_dense_tiny_test0', *guard])
    show = str(tmp_path / 'show')
    after = test_tool.main([cfg_path, ckpt, '--work-dir',
                            str(tmp_path / 'test'), '--show-dir', show,
                            '--cfg-options',
                            f'experiment_name={task}_dense_tiny_test'])
    # the figures of docs/dense.md's table (pytest -s shows them)
    extra = {k: (before[k], after[k]) for k in ('extra/scale_rel_err', 'psnr')
             if k in after}
    print(f'\n{task}: loss iteration 2 -> {max_iters}: {losses[1]:.4g} -> '
          f'{losses[-1]:.4g}; {metric} {before[metric]:.4g} -> '
          f'{after[metric]:.4g}; {extra}')
    assert after[metric] < before[metric], (before[metric], after[metric])
    if task == 'pointmap':  # the scale branch learns too (0.996 -> 0.472)
        key = 'extra/scale_rel_err'
        assert after[key] < 0.6 * before[key], (before[key], after[key])

    drawn = sorted(os.listdir(show))
    assert drawn == [f'scene_{i:05d}.png' for i in range(NUM_IMAGES)]
    vis = cv2.imread(osp.join(show, drawn[0]))
    image = cv2.imread(osp.join(REPO_DIR, 'tests', 'data', 'dense_sample',
                                'rgb', drawn[0]))
    h, w = image.shape[:2]
    # [image | prediction | ground truth] (the test data has targets)
    assert vis.shape[1] == 3 * w and vis.shape[0] >= h
    rows = slice(h // 2, h)  # below the panel titles
    assert np.abs(vis[rows, :w].astype(int) - image[rows]).max() == 0
