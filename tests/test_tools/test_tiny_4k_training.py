"""The tiny 4K-shaped configs, one per registered task, train and test on the
bundled data (CI covers the 4K path: tokenizer stem, stride-64 features,
heads with one more x2 stage, 2K-frame targets, predictions scored at the
original size).

Each ``configs/<task>/sapiens2-tiny-4k_*`` config is the 4K counterpart of the
tiny 1K config of its task and data (``sapiens2-tiny_*`` with the same sample
name): four times its input, the same token grid, twice its head output in
each dimension, as the 1B-4K configs are to the 1b ones (4096x3072 -> 64x48
-> 2048x1536 against 1024x768 -> 64x48 -> 1024x768).

Every config trains 2 iterations through tools/train.py and scores the
checkpoint with tools/test.py (a finite metric); the slow test trains the
config's whole schedule, which must lower the loss and beat the untrained
model.
"""
import glob
import math
import os.path as osp
import pickle

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.apis import task_names
from tests.conftest import REPO_DIR, load_tool

train_tool = load_tool('train')
test_tool = load_tool('test')


def _one(pattern):
    found = sorted(glob.glob(osp.join(REPO_DIR, pattern)))
    assert len(found) == 1, (pattern, found)
    return found[0]


def _tiny_pair(task):
    """(tiny 4K config, tiny 1K config of the same task and sample data)."""
    four_k = _one(f'configs/{task}/sapiens2-tiny-4k_*.py')
    data = osp.basename(four_k).split('_')[-1].rsplit('-', 1)[0]
    return four_k, _one(f'configs/{task}/sapiens2-tiny_*_{data}-*.py')


TASKS = task_names()
# task -> (metric of tools/test.py, whether higher is better)
METRICS = {'seg': ('aAcc', True), 'normal': ('normal_mae', False),
           'pointmap': ('l2_mean', False), 'albedo': ('mae', False),
           'pose': ('keypoints308/AP', True)}
# An untrained (or 2-step) scale MLP may predict s <= 0, which the pointmap
# head refuses by default; clamped, the canonical map that l2_mean scores is
# unchanged.
GUARD = {'pointmap': ['model.decode_head.scale_guard=clamp']}
# seg: the label maps written by --out are at each photo's size
SEG_IMAGES = 'tests/data/seg_sample/images'

# tiny models: one thread beats two fighting for a shared CPU (conftest)
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def test_every_registered_task_has_a_tiny_4k_config():
    assert sorted(METRICS) == sorted(TASKS)
    for task in TASKS:
        _tiny_pair(task)


def _forward(cfg):
    """(backbone feature map, head output) of a random input of the
    config's size."""
    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).eval()
    height, width = cfg.model.backbone.img_size
    x = torch.randn(1, 3, height, width)
    with torch.no_grad():
        feat = model.backbone(x)[-1]
        out = model._forward(x, None)
    out = out[0] if isinstance(out, (tuple, list)) else out
    return model, feat, out


@pytest.mark.parametrize('task', TASKS)
def test_tiny_4k_head_output_is_twice_the_tiny_1k_at_the_same_grid(task):
    four_k, one_k = (Config.fromfile(p) for p in _tiny_pair(task))
    assert four_k.model.backbone.use_tokenizer
    assert not one_k.model.backbone.get('use_tokenizer', False)
    assert tuple(four_k.model.backbone.img_size) == tuple(
        4 * s for s in one_k.model.backbone.img_size)
    model, feat_4k, out_4k = _forward(four_k)
    assert model.backbone.stride == 64
    _, feat_1k, out_1k = _forward(one_k)
    assert feat_4k.shape == feat_1k.shape  # the same token grid
    assert out_4k.shape[:2] == out_1k.shape[:2]
    assert tuple(out_4k.shape[2:]) == tuple(2 * s for s in out_1k.shape[2:])


def _metric(metrics, task):
    key = METRICS[task][0]
    assert key in metrics, (key, metrics)
    return metrics[key]


@pytest.mark.parametrize('task', TASKS)
def test_tiny_4k_config_trains_2_iterations_and_tests_through_the_cli(
        task, tmp_path):
    cfg_path = _tiny_pair(task)[0]
    work = str(tmp_path / 'train')
    runner = train_tool.main([
        cfg_path, '--work-dir', work, '--cfg-options',
        'train_cfg.max_iters=2', 'train_cfg.val_interval=2',
        'default_hooks.checkpoint.interval=2',
        f'experiment_name={task}_4k_tiny_2it'])
    losses, _ = runner.message_hub.get_scalar('train/loss').data
    assert len(losses) == 2 and np.isfinite(losses).all()
    metrics = test_tool.main([
        cfg_path, osp.join(work, 'iter_2.pth'), '--work-dir',
        str(tmp_path / 'test'), '--cfg-options',
        f'experiment_name={task}_4k_tiny_2it_test', *GUARD.get(task, [])])
    assert math.isfinite(_metric(metrics, task)), metrics


def _untrained(cfg_path, path):
    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(cfg_path).model)
    model.init_weights()
    torch.save({'state_dict': model.state_dict()}, path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize('task', TASKS)
def test_tiny_4k_config_learns_and_tests_at_the_original_size(task,
                                                              tmp_path):
    cfg_path = _tiny_pair(task)[0]
    work = str(tmp_path / 'train')
    runner = train_tool.main([cfg_path, '--work-dir', work, '--cfg-options',
                              f'experiment_name={task}_4k_tiny_train'])
    losses, _ = runner.message_hub.get_scalar('train/loss').data
    losses = np.asarray(losses, np.float64)
    max_iters = Config.fromfile(cfg_path).train_cfg.max_iters
    assert len(losses) == max_iters and np.isfinite(losses).all()
    assert losses[-5:].mean() < 0.95 * losses[:5].mean(), losses
    before = test_tool.main([
        cfg_path, _untrained(cfg_path, str(tmp_path / 'init.pth')),
        '--work-dir', str(tmp_path / 'test0'), '--cfg-options',
        f'experiment_name={task}_4k_tiny_test0', *GUARD.get(task, [])])
    out = str(tmp_path / 'preds.pkl')
    after = test_tool.main([
        cfg_path, osp.join(work, f'iter_{max_iters}.pth'), '--work-dir',
        str(tmp_path / 'test'), '--out', out, '--cfg-options',
        f'experiment_name={task}_4k_tiny_test'])
    higher_is_better = METRICS[task][1]
    gain = _metric(after, task) - _metric(before, task)
    assert gain > 0 if higher_is_better else gain < 0, (before, after)
    if task == 'seg':
        with open(out, 'rb') as f:
            results = pickle.load(f)
        assert len(results) == 4
        for result in results:
            photo = cv2.imread(osp.join(REPO_DIR, SEG_IMAGES,
                                        osp.basename(result['img_path'])))
            assert result['pred_sem_seg']['data'].shape[-2:] == \
                photo.shape[:2]
