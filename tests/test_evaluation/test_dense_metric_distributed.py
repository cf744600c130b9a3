"""Dense metrics over 2 CPU processes (gloo) equal the single-process result.

Each rank processes its share as mmengine's DefaultSampler hands it out
(interleaved, the last sample padded with a duplicate); BaseMetric gathers
the per-sample records in dataset order on rank 0 and drops the padding.
"""
import json
import os
import os.path as osp

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sapiens2_mm.registry import METRICS

from .test_dense_data import official_batches

WORLD = 2
CAMERA = dict(pred_scale=0.9, canonical_scale=1.1, pred_focal_length=60.0,
              cam_K=[[50.0, 0, 24], [0, 50.0, 32], [0, 0, 1]])
CASES = {
    'normal': (dict(type='NormalMetric'), 'pred_normal', 'gt_normal', None),
    'pointmap': (dict(type='PointmapMetric'), 'pred_pointmap', 'gt_pointmap',
                 CAMERA),
    'albedo': (dict(type='AlbedoMetric'), 'pred_albedo', 'gt_albedo', None),
}


def _samples(task):
    _, pred_key, gt_key, meta = CASES[task]
    samples = [s for b in official_batches(task, pred_key, gt_key, meta)
               for s in b]
    return samples[:5]  # odd count: the last batch of rank 1 is padded


def _evaluate(task, samples):
    metric = METRICS.build(CASES[task][0])
    for i in range(0, len(samples), 2):
        metric.process({}, samples[i:i + 2])
    return metric


def _worker(rank, init_file, out_file):
    # forked after the parent used torch's thread pool: stay single-threaded
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'file://{init_file}',
                            rank=rank, world_size=WORLD)
    try:
        from sapiens2_mm.utils import register_all_modules
        register_all_modules()
        out = {}
        for task in CASES:
            samples = _samples(task)
            padded = samples + samples[:(-len(samples)) % WORLD]
            metric = _evaluate(task, padded[rank::WORLD])
            out[task] = metric.evaluate(len(samples))
        with open(f'{out_file}.{rank}', 'w') as f:
            json.dump(out, f)
    finally:
        dist.destroy_process_group()


def test_two_process_gloo_equals_single_process(tmp_path):
    out = str(tmp_path / 'res')
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    mp.start_processes(_worker, args=(str(tmp_path / 'init'), out),
                       nprocs=WORLD, join=True, start_method='fork')
    expected = {}
    for task in CASES:
        samples = _samples(task)
        expected[task] = _evaluate(task, samples).evaluate(len(samples))
    for rank in range(WORLD):
        assert osp.isfile(f'{out}.{rank}')
        with open(f'{out}.{rank}') as f:
            got = json.load(f)
        for task, want in expected.items():
            assert set(got[task]) == set(want), task
            np.testing.assert_allclose([got[task][k] for k in want],
                                       list(want.values()), rtol=1e-12,
                                       atol=0, err_msg=task)
    assert 'extra/fov_x_err_deg' in expected['pointmap']
    assert 'extra/normal_median_exact_deg' in expected['normal']
