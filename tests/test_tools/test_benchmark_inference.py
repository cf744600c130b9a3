"""tools/analysis_tools/benchmark_inference.py on a tiny backbone.

The documented commands time a 0.1B model (minutes); these run the same
script, with the shipped configs, on a 2-block backbone at 64x48 and check
that every figure the README quotes is printed and sane.
"""
import json
import math
import os.path as osp
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR, subprocess_budget

SCRIPT = osp.join(REPO_DIR, 'tools', 'analysis_tools',
                  'benchmark_inference.py')
TINY_ARCH = json.dumps(dict(embed_dims=32, num_layers=2, num_heads=4,
                            feedforward_channels=64, num_tokenizer_layers=1))
POSE = 'configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py'
SEG = 'configs/seg/sapiens2-0.4b_8xb12-20k_seg29-1024x768.py'


def _run(config, *extra):
    cmd = [sys.executable, SCRIPT, config, '--arch', TINY_ARCH,
           '--input-size', '64', '48', '--repeat', '1', '--rounds', '2',
           '--gemm-size', '256', *extra]
    done = subprocess.run(cmd, cwd=REPO_DIR, capture_output=True, text=True,
                          timeout=subprocess_budget(100))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _ratio(text, label):
    """The median and the per-round ratios printed after ``label``."""
    match = re.search(re.escape(label) + r'\s+([\d.]+) \(per round: ([^)]*)\)',
                      text)
    assert match, f'{label!r} not printed:\n{text}'
    return float(match.group(1)), [float(v) for v in
                                   match.group(2).split(', ')]


def _percent_of_peak(text, mode):
    match = re.search(re.escape(f'model-only {mode}') + r'.*?([\d.]+)% of the',
                      text)
    assert match, f'no GEMM-peak fraction for {mode!r}:\n{text}'
    return float(match.group(1))


@pytest.mark.slow
def test_pose_eager_fp32_bf16_and_end_to_end():
    out = _run(POSE, '--dtypes', 'fp32', 'bf16', '--compile',
               '--compile-dtypes', 'fp32')
    assert 'model-only compiled fp32' in out
    assert '4 images' in out and '14 network items' in out  # COCO people
    # The fraction of GEMM peak is a timing (it read 1092 % on a loaded
    # machine): only that it is printed, as a number, is checked.
    for mode in ('eager    fp32', 'eager    bf16'):
        assert math.isfinite(_percent_of_peak(out, mode))
    median, rounds = _ratio(out, 'speed vs eager fp32:')  # bf16, first
    assert len(rounds) == 2 and min(rounds) <= median <= max(rounds)
    compiled = re.search(r'compiled fp32 vs eager fp32 outputs: relative L2 '
                         r'\S+, max abs (\S+),', out)
    assert compiled and float(compiled.group(1)) < 1e-4
    # bf16 changes the heatmaps, by a bounded amount; the shift is printed.
    rel = float(re.search(r'bf16 vs eager fp32 outputs: relative L2 (\S+),',
                          out).group(1))
    assert 1e-4 < rel < 0.1
    assert 'keypoint shift median' in out
    # One drawing per photo, by the pipeline and by the serial loop, in
    # each of the 2 rounds: 4 x 2 x 2.
    written = re.search(r'end-to-end eager fp32 \((\d+) files written\)', out)
    assert written and int(written.group(1)) == 16
    for label in ('pipeline / model-only throughput:',
                  'pipeline / serial throughput:'):
        median, rounds = _ratio(out, label)
        assert len(rounds) == 2 and all(r > 0 for r in rounds)


@pytest.mark.slow
def test_seg_compiled_matches_eager():
    out = _run(SEG, '--dtypes', 'fp32', '--compile')
    assert 'model-only compiled fp32' in out
    _ratio(out, 'speed vs eager fp32:')
    match = re.search(r'compiled fp32 vs eager fp32 outputs: relative L2 '
                      r'(\S+), max abs (\S+)', out)
    assert match, out
    assert float(match.group(2)) < 1e-4  # the bound on compiled
