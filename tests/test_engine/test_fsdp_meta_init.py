"""FSDP start without the whole model on any rank (``init_on_meta``).

Each start is tests/test_engine/fsdp_start_worker.py under torchrun (2 gloo
processes, or 1): Sapiens2FSDPStrategy builds the config's model, initialises
and wraps it, and the worker reports what the rank held and gathers the full
state. References are independent: the plain build and ``init_weights`` of
the same config (today's init, whose distributions each parameter must
follow: constants exactly, random tensors by a two-sample Kolmogorov-Smirnov
test), the file a backbone is pretrained from, and the 1-process start.
"""
import json
import math
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch

from tests.conftest import REPO_DIR, TESTS_DIR, subprocess_budget

from ..test_tools.workflow_utils import free_port

pytestmark = pytest.mark.slow

WORKER = osp.join(TESTS_DIR, 'test_engine', 'fsdp_start_worker.py')
FSDP_CFG = osp.join(TESTS_DIR, 'configs', 'workflow', 'tiny_seg_fsdp.py')
STRATEGY = osp.join(REPO_DIR, 'configs', '_base_', 'strategies',
                    'fsdp_bf16.py')
# 8 block units of 260 kB and a root unit of 120 kB (patch embed, norm,
# head): the model is 2.4 MB
DEEP = ('model = dict(backbone=dict(arch=dict(embed_dims=64, num_layers=8, '
        'feedforward_channels=256)), decode_head=dict(in_channels=64, '
        'channels=16))\n')


def _config(tmp_path, name, text):
    path = tmp_path / f'{name}.py'
    path.write_text(text)
    return str(path)


def _fsdp_leaf(tmp_path, name, base, extra=''):
    """``base`` under the shipped FSDP snippet in fp32."""
    return _config(tmp_path, name, (
        f'_base_ = [{base!r}, {STRATEGY!r}]\n'
        'strategy = dict(model_wrapper=dict(mixed_precision=None))\n' + extra))


def start(config, out, nproc=2, check=True, **overrides):
    """The worker on ``nproc`` gloo ranks; (per-rank reports, full state)."""
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, '-m', 'torch.distributed.run',
           f'--nproc_per_node={nproc}', f'--master_port={free_port()}',
           WORKER, config, out,
           *(f'{k}={v!r}' for k, v in overrides.items())]
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')
    proc = subprocess.run(cmd, cwd=REPO_DIR, env=env, capture_output=True,
                          text=True, timeout=subprocess_budget(100))
    if not check:
        return proc
    assert proc.returncode == 0, proc.stderr[-5000:]
    reports = []
    for rank in range(nproc):
        with open(osp.join(out, f'rank{rank}.json')) as f:
            reports.append(json.load(f))
    state = torch.load(osp.join(out, 'state.pth'), map_location='cpu')
    return reports, state


def plain_init(config, seed=0):
    """Today's init: the whole model built and ``init_weights`` run."""
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(seed)
    model = MODELS.build(Config.fromfile(config).model)
    model.init_weights()
    return model.state_dict()


def ks_statistic(a, b):
    """Two-sample Kolmogorov-Smirnov statistic of the values of a and b."""
    a = a.flatten().double().sort().values
    b = b.flatten().double().sort().values
    both = torch.cat([a, b]).sort().values
    cdf_a = torch.searchsorted(a, both, right=True).double() / a.numel()
    cdf_b = torch.searchsorted(b, both, right=True).double() / b.numel()
    return float((cdf_a - cdf_b).abs().max())


def assert_same_init_distribution(got, config, skip=()):
    """Every tensor as today's init of ``config`` gives it: dtype and shape;
    a deterministic one (the same for seeds 0 and 1: zeros, ones,
    LayerScale, RoPE periods, normalisation) exactly; a random one drawn
    anew from the same distribution (KS at alpha = 1e-6, for tensors of 50
    values or more). Returns the number of random tensors."""
    reference, other = plain_init(config, 0), plain_init(config, 1)
    assert set(got) == set(reference)
    random = 0
    for key, ref in reference.items():
        if key.startswith(skip):
            continue
        value = got[key]
        assert (value.dtype, value.shape) == (ref.dtype, ref.shape), key
        if torch.equal(ref, other[key]):
            assert torch.equal(value, ref), key
            continue
        random += 1
        assert not torch.equal(value, ref), key  # drawn anew, not copied
        if ref.numel() >= 50:
            limit = math.sqrt(-math.log(1e-6 / 2) / 2) * math.sqrt(
                2 / ref.numel())
            assert ks_statistic(value, ref) < limit, key
    return random


def test_no_rank_holds_the_whole_model(tmp_path):
    """Meta start: nothing when wrapping starts, at most the rank's shards
    plus one unit and its template copy at any time, well under the model.

    Before (init_on_meta=False, upstream's path): every rank held the whole
    model when wrapping started.
    """
    config = _config(tmp_path, 'deep', f'_base_ = [{FSDP_CFG!r}]\n{DEEP}')
    reports, _ = start(config, str(tmp_path / 'meta'))
    for report in reports:
        full = report['full_param_bytes']
        meta = report['meta_init']
        assert meta['model_bytes'] == full
        assert meta['units'] == 9
        assert report['before_wrap_bytes'] == 0
        assert abs(report['shard_param_bytes'] - full / 2) <= 1024
        peak = meta['peak_materialized_bytes']
        assert peak <= report['shard_param_bytes'] + 2 * meta[
            'largest_unit_bytes']
        assert peak < 0.6 * full, (peak, full)
    old, _ = start(config, str(tmp_path / 'old'), init_on_meta=False)
    for report in old:
        assert report['before_wrap_bytes'] == report['full_param_bytes']
        assert report['meta_init'] is None


def test_init_values_follow_the_init_code_for_any_world_size(tmp_path):
    """The gathered meta-initialised model is the same on 1 and 2 ranks, and
    follows today's init distributions parameter by parameter (seg with an
    mmcv ConvModule head initialised in its constructor, pose with the
    official Kaiming/Normal head init); the pretraining teacher starts as
    its student, as init_weights makes it."""
    seg = _config(tmp_path, 'deep', f'_base_ = [{FSDP_CFG!r}]\n{DEEP}')
    _, one = start(seg, str(tmp_path / 'one'), nproc=1)
    _, two = start(seg, str(tmp_path / 'two'))
    assert one.keys() == two.keys()
    for key in one:
        assert torch.equal(one[key], two[key]), key
    assert assert_same_init_distribution(two, seg) >= 40

    pose = _fsdp_leaf(tmp_path, 'pose', osp.join(
        REPO_DIR, 'configs', 'pose',
        'sapiens2-tiny_1xb12-300_cocosample-128x96.py'))
    _, state = start(pose, str(tmp_path / 'pose'))
    assert assert_same_init_distribution(state, pose) >= 25

    pretrain = _fsdp_leaf(tmp_path, 'pretrain', osp.join(
        REPO_DIR, 'configs', 'pretrain', 'sapiens2-tiny_pretrain-cpu-64x48.py'))
    _, state = start(pretrain, str(tmp_path / 'pretrain'))
    teacher = {k[len('teacher.module.'):]: v for k, v in state.items()
               if k.startswith('teacher.module.')}
    assert len(teacher) >= 40
    for key, value in teacher.items():
        assert torch.equal(value, state[key]), key
    assert_same_init_distribution(state, pretrain, skip=('teacher.',))


def test_pretrained_backbone_and_load_from_stay_strict(tmp_path):
    """A Pretrained backbone init_cfg is read per unit (a map of the file):
    the gathered backbone equals the file; a file with a wrong shape or a
    missing key, and a load_from that does not fit, stop both ranks with the
    keys listed."""
    from safetensors.torch import save_file
    base = _config(tmp_path, 'deep', f'_base_ = [{FSDP_CFG!r}]\n{DEEP}')
    reference = plain_init(base)
    backbone = {k[len('backbone.'):]: torch.randn_like(v.float()).to(v.dtype)
                for k, v in reference.items() if k.startswith('backbone.')}
    good = str(tmp_path / 'backbone.safetensors')
    save_file(backbone, good)
    pretrained = _config(tmp_path, 'pretrained', (
        f'_base_ = [{base!r}]\n'
        'model = dict(backbone=dict(init_cfg=dict(_delete_=True, '
        'type="Pretrained", '
        f'checkpoint={good!r})))\n'))
    _, state = start(pretrained, str(tmp_path / 'good'))
    for key, value in backbone.items():
        assert torch.equal(state['backbone.' + key], value), key
    assert assert_same_init_distribution(state, base,
                                         skip=('backbone.',)) >= 2

    bad = dict(backbone)
    bad['blocks.3.attn.wq.weight'] = torch.zeros(64, 32)
    del bad['blocks.5.ffn.w3.bias']
    bad_file = str(tmp_path / 'bad.safetensors')
    save_file(bad, bad_file)
    mismatched = _config(tmp_path, 'mismatched', (
        f'_base_ = [{base!r}]\n'
        'model = dict(backbone=dict(init_cfg=dict(_delete_=True, '
        'type="Pretrained", '
        f'checkpoint={bad_file!r})))\n'))
    proc = start(mismatched, str(tmp_path / 'bad'), check=False)
    assert proc.returncode != 0
    assert proc.stderr.count('CheckpointMismatchError') >= 2  # both ranks
    assert 'blocks.5.ffn.w3.bias' in proc.stderr
    assert 'blocks.3.attn.wq.weight checkpoint (64, 32) vs model (64, 64)' \
        in proc.stderr

    wrong = str(tmp_path / 'wrong.pth')
    torch.save(dict(state_dict={('backbone.' + k): v for k, v in bad.items()}),
               wrong)
    proc = start(base, str(tmp_path / 'load_from'), check=False,
                 load_before_wrap=dict(checkpoint=wrong))
    assert proc.returncode != 0
    assert proc.stderr.count('CheckpointMismatchError') >= 2
    assert 'decode_head.conv_seg.weight' in proc.stderr  # missing: the head
