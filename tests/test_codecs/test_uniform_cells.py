"""Uniform-cell look-up of upsampled labels against PyTorch's own kernels."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from sapiens2_mm.codecs.label_resize import _source_index
from sapiens2_mm.codecs.uniform_cells import (
    first_argmax_top2,
    interpolate_at,
    source_labels,
    uniform_cells,
)
from tests.conftest import REPO_DIR


def test_first_argmax_top2_matches_argmax_and_topk_with_ties():
    torch.manual_seed(0)
    # small integers: many exact ties between the best classes
    scores = torch.randint(0, 4, (7, 50, 40)).float()
    labels, best, second = first_argmax_top2(scores)
    top2 = scores.topk(2, dim=0).values
    assert torch.equal(labels, scores.argmax(0))
    assert torch.equal(best, top2[0]) and torch.equal(second, top2[1])


def test_source_labels_flags_near_ties_as_undecided():
    scores = torch.zeros(3, 1, 4)
    scores[0, 0] = torch.tensor([5.0, 5.0, 5.0, 5.0])
    scores[2, 0] = torch.tensor([1.0, 5.0, 5.0 - 1e-6, 5.0 + 1e-3])
    labels, decided = source_labels(scores, None)
    assert labels[0].tolist() == [0, 0, 0, 2]
    # margin 4 / exact tie / 1e-6 (under 1e-5 x 5) / 1e-3
    assert decided[0].tolist() == [True, False, False, True]


def test_source_labels_binary_thresholds_the_sigmoid():
    cut = torch.logit(torch.tensor(0.3)).item()
    logit = torch.tensor([[[cut - 1, cut + 1, cut + 1e-7, 4.0]]])
    labels, decided = source_labels(logit, 0.3)
    assert labels[0].tolist() == [0, 1, 1, 1]
    assert decided[0].tolist() == [True, True, False, True]


def test_uniform_cells_needs_four_equal_decided_corners():
    labels = torch.tensor([[1, 1, 2],
                           [1, 1, 1],
                           [1, 1, 1]])
    decided = torch.ones(3, 3, dtype=torch.bool)
    decided[2, 0] = False
    expected = torch.tensor([[True, False, False],   # (0,1) touches the 2
                             [False, True, True],    # (1,0) touches (2,0)
                             [False, True, True]])   # last row/col clamp
    assert torch.equal(uniform_cells(labels, decided), expected)


@pytest.mark.parametrize('out_size,in_size,align',
                         [(217, 24, False), (640, 96, False),
                          (4032, 768, False), (13, 24, False),
                          (301, 97, True)])
def test_source_weights_are_pytorchs(out_size, in_size, align):
    """A one-hot source column interpolates to its weight, exactly."""
    low, high, weight = _source_index(out_size, in_size, align, 'cpu')
    recovered = torch.zeros(out_size)
    for j in range(in_size):
        onehot = torch.zeros(1, 1, 1, in_size)
        onehot[..., j] = 1
        out = F.interpolate(onehot, size=(1, out_size), mode='bilinear',
                            align_corners=align)[0, 0, 0]
        at = (high == j) & (high != low)
        recovered[at] = out[at]
    moving = high != low
    assert moving.any()
    assert torch.equal(recovered[moving], weight[moving])


def test_source_weights_follow_a_kernel_that_does_not_fuse():
    """PyTorch's baseline CPU kernel (no FMA) rounds the source position
    twice; the weights follow it there too (a fresh process, since the
    kernel choice is read once at start-up)."""
    code = ('import runpy; runpy.run_path(%r, run_name="x")'
            '["test_source_weights_are_pytorchs"](4032, 768, False)'
            % __file__)
    env = dict(os.environ, ATEN_CPU_CAPABILITY='default')
    done = subprocess.run([sys.executable, '-c', code], env=env,
                          capture_output=True, text=True, cwd=REPO_DIR)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize('size,align', [((301, 217), False), ((20, 13), False),
                                        ((97, 301), True)])
def test_interpolate_at_equals_pytorch_bilinear(size, align):
    torch.manual_seed(0)
    scores = torch.randn(5, 32, 24) * 10
    ref = F.interpolate(scores[None], size=size, mode='bilinear',
                        align_corners=align)[0]
    rows = _source_index(size[0], 32, align, scores.device)
    cols = _source_index(size[1], 24, align, scores.device)
    ys = torch.randint(0, size[0], (2000, ))
    xs = torch.randint(0, size[1], (2000, ))
    values = interpolate_at(scores, tuple(r[ys] for r in rows),
                            tuple(c[xs] for c in cols))
    # one float32 rounding of the largest score (a weight off by one ulp of
    # the source position, as before _source_index fused the multiply-add,
    # is 10x more)
    ulp = 2.0**-23 * scores.abs().max()
    assert (values - ref[:, ys, xs]).abs().max() <= 2 * ulp
