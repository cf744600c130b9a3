"""tools/benchmarks, on tiny inputs: the figures a benchmark prints come from
runs that agree with each other (see tools/benchmarks/README.md)."""
import json
import os.path as osp
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR, load_tool, subprocess_budget


@pytest.mark.slow
def test_tiny_benchmark_variants_agree_and_shard(tmp_path):
    """fsdp.py: FSDP1, FSDP2 and DDP end equal, and both FSDP variants
    hold half of DDP's model state."""
    # Its own interpreter: the benchmark forks its 2 ranks, and a fork of a
    # pytest worker whose earlier tests started autograd's device threads
    # fails in backward ("Unable to handle autograd's threading in
    # combination with fork-based multiprocessing"), depending on test order.
    out = tmp_path / 'bench.json'
    proc = subprocess.run(
        [sys.executable, osp.join(REPO_DIR, 'tools', 'benchmarks', 'fsdp.py'),
         '--embed-dims', '64', '--num-layers', '2', '--input-size', '32',
         '32', '--batch-size', '2', '--iters', '1', '--out', str(out)],
        cwd=REPO_DIR, capture_output=True, text=True,
        timeout=subprocess_budget(100))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        rows = json.load(f)['results']
    assert set(rows) == {'fsdp1', 'fsdp2', 'ddp'}
    for row in rows.values():
        assert row['max_param_diff'] <= 1e-6
    # 2 ranks: each FSDP rank holds about half the state DDP holds
    assert rows['ddp']['state_mib_vs_fsdp1'] == pytest.approx(2.0, rel=0.02)
    assert rows['fsdp2']['state_mib_vs_fsdp1'] == pytest.approx(1.0, rel=0.02)


@pytest.mark.slow
def test_tiny_fsdp_memory_benchmark_resumes_one_state(tmp_path):
    """fsdp_memory.py: the single process, today's FSDP path and the meta
    start with sharded checkpoints resume the same weights and AdamW state
    (the script exits non-zero otherwise) and report both phases per job.
    Memory figures are printed, not asserted."""
    out = tmp_path / 'memory.json'
    proc = subprocess.run(
        [sys.executable, osp.join(REPO_DIR, 'tools', 'benchmarks',
                                  'fsdp_memory.py'),
         '--embed-dims', '64', '--num-layers', '2', '--out', str(out)],
        cwd=REPO_DIR, capture_output=True, text=True,
        timeout=subprocess_budget(100))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        table = json.load(f)
    assert set(table['results']) == {'single', 'fsdp_full', 'fsdp_sharded'}
    assert table['results']['fsdp_sharded']['ranks'] == 2
    for row in table['results'].values():
        assert row['start']['peak_rss_mib'] > 0
        assert row['resume']['peak_rss_mib'] > 0
    assert len(table['sizes']['shard_files_mib']) == 2


def test_label_resize_both_ways_agree(capsys):
    rows = load_tool('benchmarks/label_resize').main(
        ['--sizes', '128x96:480x640', '256x192:300x200', '--repeat', '1'])
    out = capsys.readouterr().out
    assert out.count('resize_argmax') == 4
    assert [r['kind'] for r in rows] == ['smooth', 'noise'] * 2
    for row in rows:
        assert row['differ'] == 0
        assert row['dense_ms'] > 0 and row['new_ms'] > 0
        # smooth logits are mostly uniform cells, noise is all boundaries
        assert (row['boundary'] < 0.25) == (row['kind'] == 'smooth')


def test_label_resize_rejects_bad_sizes():
    with pytest.raises(SystemExit, match='expected NETHxNETW:PHOTOHxPHOTOW'):
        load_tool('benchmarks/label_resize').main(['--sizes', '1024x768'])


def test_loader_4k_before_and_after_give_equal_batches(capsys):
    """loader_4k.py on one dense sample: the shipped 4K pipeline and the one
    it replaced give equal batches, and every variant is measured."""
    import cv2
    import torch
    threads = cv2.getNumThreads(), torch.get_num_threads()
    rows = load_tool('benchmarks/loader_4k').main(
        ['--tasks', 'normal', '--rounds', '1', '--samples', '1'])
    assert (cv2.getNumThreads(), torch.get_num_threads()) == threads
    row, = rows
    assert all(rate > 0 for rate in row['images_per_cpu_s'].values())
    assert row['task'] == 'normal' and row['equal_before_after']
    assert set(row['images_per_s']) == {'1k', '4k-before', '4k',
                                        '4k-options'}
    assert all(rate > 0 for rate in row['images_per_s'].values())
    assert row['vs_1k']['1k'] == 1.0
    # the step that changed: one DenseResizePad instead of two steps
    assert any('DenseToOutputSize' in k for k in row['steps_ms']['4k-before'])
    assert not any('DenseToOutputSize' in k for k in row['steps_ms']['4k'])
    # the upstream colour distortion before, its lookup-table form after
    assert any(k.endswith(' mmseg.PhotoMetricDistortion')
               for k in row['steps_ms']['4k-before'])
    assert any(k.endswith(' PhotoMetricDistortionLUT')
               for k in row['steps_ms']['4k'])
    assert 'batches equal: True' in capsys.readouterr().out


def test_loader_4k_rejects_an_unknown_task():
    with pytest.raises(SystemExit, match='registered tasks'):
        load_tool('benchmarks/loader_4k').main(['--tasks', 'depth'])
