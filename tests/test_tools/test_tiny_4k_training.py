"""The tiny 4K-shaped configs train and test on the bundled data (CI covers
the 4K path: tokenizer stem, stride-64 features, half-resolution heads, 2K
targets, predictions scored at the original size).

tools/train.py lowers the loss; tools/test.py scores the trained checkpoint
better than the untrained model and (seg, ``--out``) writes label maps at
each photo's original size.
"""
import os.path as osp
import pickle

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from tests.conftest import REPO_DIR, load_tool

train_tool = load_tool('train')
test_tool = load_tool('test')

TINY_4K = {
    'seg': ('configs/seg/sapiens2-tiny-4k_1xb2-30_seg29sample-256x192.py',
            'aAcc', 'tests/data/seg_sample/images'),
    'normal': ('configs/normal/'
               'sapiens2-tiny-4k_1xb2-30_densesample-256x192.py',
               'normal_mae', None),
}


# tiny models: one thread beats two fighting for a shared CPU (conftest)
pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.mark.parametrize('task', sorted(TINY_4K))
def test_tiny_4k_model_is_4k_shaped(task):
    from sapiens2_mm.registry import MODELS
    cfg = Config.fromfile(osp.join(REPO_DIR, TINY_4K[task][0]))
    backbone = cfg.model.backbone
    assert backbone.use_tokenizer and tuple(backbone.img_size) == (256, 192)
    model = MODELS.build(cfg.model).eval()
    assert model.backbone.stride == 64
    with torch.no_grad():
        out = model._forward(torch.randn(1, 3, 256, 192), None)
    assert tuple(out.shape[-2:]) == (128, 96)  # half the input, as 4K


def _untrained(cfg_path, path):
    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(cfg_path).model)
    model.init_weights()
    torch.save({'state_dict': model.state_dict()}, path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize('task', sorted(TINY_4K))
def test_tiny_4k_config_learns_and_tests_at_the_original_size(task,
                                                              tmp_path):
    rel, metric, images = TINY_4K[task]
    cfg_path = osp.join(REPO_DIR, rel)
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
        f'experiment_name={task}_4k_tiny_test0'])
    out = str(tmp_path / 'preds.pkl')
    after = test_tool.main([
        cfg_path, osp.join(work, f'iter_{max_iters}.pth'), '--work-dir',
        str(tmp_path / 'test'), '--out', out, '--cfg-options',
        f'experiment_name={task}_4k_tiny_test'])
    if metric == 'normal_mae':
        assert after[metric] < before[metric], (before, after)
    else:
        assert after[metric] > before[metric], (before, after)
    if images:
        with open(out, 'rb') as f:
            results = pickle.load(f)
        assert len(results) == 4
        for result in results:
            photo = cv2.imread(osp.join(REPO_DIR, images,
                                        osp.basename(result['img_path'])))
            assert result['pred_sem_seg']['data'].shape[-2:] == \
                photo.shape[:2]
