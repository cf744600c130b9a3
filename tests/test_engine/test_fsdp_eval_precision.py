"""Testing under the bf16 FSDP snippet runs in fp32 unless asked.

tools/test.py on 2 gloo ranks with the tiny COCO pose config plus
configs/_base_/strategies/fsdp_bf16.py, against the plain (no strategy) test
of the same checkpoint: the keypoints agree. Before, FSDP gathered bf16
parameters and cast the inputs to bf16 for evaluation too (keypoints moved
up to 56 px); ``strategy.mixed_precision_in_eval=True`` still asks for that,
and moves them.
"""
import os.path as osp
import pickle

import numpy as np
import pytest

from ..test_tools.workflow_utils import REPO_DIR, load_tool
from .test_fsdp_strategy import run2

pytestmark = pytest.mark.slow

POSE = osp.join(REPO_DIR, 'configs', 'pose',
                'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
BF16 = osp.join(REPO_DIR, 'configs', '_base_', 'strategies', 'fsdp_bf16.py')


def _keypoints(path):
    with open(path, 'rb') as f:
        samples = pickle.load(f)
    by_id = {(s['img_id'], s['id']): s['pred_instances']['keypoints']
             for s in samples}
    return np.stack([np.asarray(by_id[k]) for k in sorted(by_id)])


def test_fsdp_bf16_snippet_tests_in_fp32(tmp_path):
    import torch

    from tests.tiny_variants import random_checkpoint
    torch.manual_seed(0)
    ckpt = random_checkpoint(POSE, str(tmp_path / 'random.pth'))
    common = ['--cfg-options', 'test_dataloader.batch_size=2']
    load_tool('test').main([POSE, ckpt, '--work-dir', str(tmp_path / 'p'),
                            '--out', str(tmp_path / 'plain.pkl'), *common])
    leaf = tmp_path / 'fsdp.py'
    leaf.write_text(f'_base_ = [{POSE!r}, {BF16!r}]\n')
    run2('test', [str(leaf), ckpt, '--work-dir', str(tmp_path / 'f'),
                  '--out', str(tmp_path / 'fsdp.pkl'), *common])
    asked = tmp_path / 'fsdp_bf16_eval.py'
    asked.write_text(f'_base_ = [{str(leaf)!r}]\n'
                     'strategy = dict(mixed_precision_in_eval=True)\n')
    run2('test', [str(asked), ckpt, '--work-dir', str(tmp_path / 'b'),
                  '--out', str(tmp_path / 'bf16.pkl'), *common])
    plain = _keypoints(tmp_path / 'plain.pkl')
    fsdp = _keypoints(tmp_path / 'fsdp.pkl')
    bf16 = _keypoints(tmp_path / 'bf16.pkl')
    # the 12 labelled people of the sample
    assert plain.shape == fsdp.shape == bf16.shape and plain.shape[0] == 12
    fp32_shift = float(np.abs(fsdp - plain).max())
    bf16_shift = float(np.abs(bf16 - plain).max())
    # fp32 both: equal up to float rounding between batch splits, which can
    # move the sub-pixel peak of a near-flat heatmap of random weights
    assert float(np.median(np.abs(fsdp - plain))) < 1e-3
    assert fp32_shift < 1.0, fp32_shift
    assert bf16_shift > 10.0, bf16_shift  # what evaluation did before
