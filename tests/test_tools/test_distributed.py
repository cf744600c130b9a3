"""Real 2-process distributed training and testing on the CPU (gloo).

tools/dist_train.sh (torchrun) starts two ranks of tools/train.py; they train
the workflow config with DDP and evaluate with a distributed sampler (5 images
over 2 ranks, so the sampler pads one). The gathered metric must equal a
single-process evaluation of the same checkpoint, and tools/dist_test.sh with 2
processes must return exactly the single-process predictions, each image once
and in order.
"""
import json
import os.path as osp
import pickle

import pytest
import torch

from .workflow_utils import (
    DIST_TEST,
    DIST_TRAIN,
    WORKFLOW_CFG,
    load_tool,
    make_data,
    run_tool,
    scalars,
)


@pytest.mark.slow
def test_two_process_gloo_train_and_eval_match_single_process(
        tmp_path, monkeypatch):
    data = make_data(str(tmp_path / 'data'))
    work = str(tmp_path / 'dist')
    proc = run_tool([DIST_TRAIN, WORKFLOW_CFG, '2', '--work-dir', work], data)
    assert 'Distributed training is not used' not in proc.stdout
    with open(_logs(work)[0]) as f:
        log = f.read()
    assert 'Distributed training: True' in log
    assert "model_wrapper_cfg = dict(device_ids=None" in log  # CPU DDP
    val = [e for e in scalars(work) if 'mIoU' in e]
    assert len(val) == 1  # one evaluation, after iteration 6
    ckpt = osp.join(work, 'iter_6.pth')

    # single process, in this process (saves an interpreter start)
    single_out = str(tmp_path / 'single.pkl')
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', data)
    load_tool('test').main([WORKFLOW_CFG, ckpt, '--work-dir',
                            str(tmp_path / 's'), '--out', single_out])
    with open(tmp_path / 's' / 'test_metrics.json') as f:
        single = json.load(f)
    for key in ('aAcc', 'mIoU', 'mAcc'):
        assert val[0][key] == single[key], key

    dist_out = str(tmp_path / 'dist.pkl')
    run_tool([DIST_TEST, WORKFLOW_CFG, ckpt, '2', '--work-dir',
              str(tmp_path / 'd'), '--out', dist_out], data)
    with open(tmp_path / 'd' / 'test_metrics.json') as f:
        assert json.load(f) == single
    with open(single_out, 'rb') as f:
        a = pickle.load(f)
    with open(dist_out, 'rb') as f:
        b = pickle.load(f)
    assert [r['img_path'] for r in b] == [r['img_path'] for r in a]
    assert len({r['img_path'] for r in b}) == 5
    for x, y in zip(a, b):
        torch.testing.assert_close(x['seg_logits']['data'],
                                   y['seg_logits']['data'])


def _logs(work_dir):
    import glob
    return sorted(glob.glob(osp.join(work_dir, '*', '*.log')))
