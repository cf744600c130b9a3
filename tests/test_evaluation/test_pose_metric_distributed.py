"""Distributed evaluation: 2 CPU processes (gloo) give the single-process AP.

Each rank processes its share of the samples as mmengine's DefaultSampler
hands them out (interleaved, the last one padded with a duplicate); BaseMetric
gathers the results once per sample on rank 0 and drops the padding.
"""
import json
import os
import os.path as osp

import numpy as np
import torch.distributed as dist
import torch.multiprocessing as mp

from sapiens2_mm.evaluation.metrics.pose import KeypointOKSMetric

from .test_pose_data import (
    COCO17_JSON,
    COCO17_SIGMAS,
    load_json,
    perturbed_predictions,
)

WORLD = 2


def _samples():
    samples = perturbed_predictions(load_json(COCO17_JSON), seed=11)
    return samples[:-1] if len(samples) % 2 == 0 else samples  # odd count


def _worker(rank, init_file, out_file):
    dist.init_process_group('gloo', init_method=f'file://{init_file}',
                            rank=rank, world_size=WORLD)
    try:
        samples = _samples()
        padded = samples + samples[:(-len(samples)) % WORLD]
        metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS)
        mine = padded[rank::WORLD]
        for i in range(0, len(mine), 3):
            metric.process([], mine[i:i + 3])
        res = metric.evaluate(len(samples))
        with open(f'{out_file}.{rank}', 'w') as f:
            json.dump(res, f)
    finally:
        dist.destroy_process_group()


def test_two_process_gloo_equals_single_process(tmp_path):
    samples = _samples()
    single = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS)
    single.process([], samples)
    expected = single.evaluate(len(samples))

    out = str(tmp_path / 'res')
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    # fork: the children inherit the imported modules (seconds, not tens)
    mp.start_processes(_worker, args=(str(tmp_path / 'init'), out),
                       nprocs=WORLD, join=True, start_method='fork')
    for rank in range(WORLD):
        assert osp.isfile(f'{out}.{rank}')
        with open(f'{out}.{rank}') as f:
            got = json.load(f)
        assert set(got) == set(expected)
        np.testing.assert_allclose([got[k] for k in expected],
                                   list(expected.values()), rtol=0, atol=1e-12)
    assert 0.05 < expected['coco/AP'] < 0.95
