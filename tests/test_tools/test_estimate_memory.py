"""tools/analysis_tools/estimate_memory.py: what the run does is read from the
config (strategy, precision, checkpointing, batch), a yes/no answer for N
GPUs of M GB, the pretraining configs, a check against a measured CPU peak,
and every shipped config fits the GPUs its name gives (the docs table)."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from .workflow_utils import REPO_DIR, load_tool

estimate_memory = load_tool('analysis_tools/estimate_memory')
import memory_model  # noqa: E402  (put on sys.path by estimate_memory)

GB = 1024**3
CONFIGS = osp.join(REPO_DIR, 'configs')
POSE_1B = osp.join(CONFIGS, 'pose', 'sapiens2-1b_8xb7-20k_sapiens308-1024x768.py')
POINTMAP_1B = osp.join(CONFIGS, 'pointmap',
                       'sapiens2-1b_8xb3-40k_pointmap-1024x768.py')
SEG_1B = osp.join(CONFIGS, 'seg', 'sapiens2-1b_8xb8-20k_seg29-1024x768.py')
SHIPPED = sorted(p for p in glob.glob(osp.join(CONFIGS, '*', '*.py'))
                 if '_base_' not in p)


def _rel(path):
    return osp.relpath(path, REPO_DIR)


def _meta_model(cfg):
    from sapiens2_mm.models.layers import Sapiens2Block
    from sapiens2_mm.registry import MODELS
    model_cfg = cfg.model.to_dict()
    model_cfg['backbone']['init_cfg'] = None
    with torch.device('meta'):
        model = MODELS.build(model_cfg)
    blocks = [m for m in model.modules() if isinstance(m, Sapiens2Block)]
    in_blocks = {id(p) for b in blocks for p in b.parameters()}
    params = sum(p.numel() for p in model.parameters())
    outer = sum(p.numel() for p in model.parameters()
                if id(p) not in in_blocks)
    unit = max(sum(p.numel() for p in b.parameters()) for b in blocks)
    return params, outer, unit


def test_saved_bytes_counts_each_activation_once():
    """Parameters are not activations; a view is counted with its base;
    the fused attention keeps q, k, v, out and a float32 log-sum-exp."""
    weight = torch.nn.Parameter(torch.randn(8, 4))
    recorder = memory_model.SavedBytes([weight])
    a = torch.randn(5, 8, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(recorder.pack,
                                                  lambda t: t):
        out = (a @ weight).relu()  # saves a (and weight), relu's output
        (a.view(40) * a.view(40)).sum()  # views of a: no new memory
    assert recorder.bytes == {'other': (5 * 8 + 5 * 4) * 4}
    recorder = memory_model.SavedBytes([])
    q = torch.randn(1, 2, 6, 4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(recorder.pack,
                                                  lambda t: t), \
            memory_model.fused_attention():
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    # q (= k = v, one tensor), out, lse; never the 6x6 score matrix
    assert recorder.bytes == {'other': (2 * 48 + 12) * 4}
    assert out.shape == (5, 4)


def test_model_state_of_one_gpu_ddp_and_fsdp():
    """fp32 pointmap: 16 B per parameter on one GPU, + 4 B of DDP gradient
    buckets on 8, and under FSDP the 16 B over 8 GPUs plus the gathered
    fp32 units (the parameters in no block with their gradients, two block
    units in flight and one block's gradient), counted here from the model
    itself."""
    fsdp = Config.fromfile(POINTMAP_1B)
    params, outer, unit = _meta_model(fsdp)
    sharded = estimate_memory.estimate(fsdp, 8)
    assert sharded['setup'].strategy == 'fsdp'
    assert sharded['setup'].compute_dtype == torch.float32
    assert sharded['params'] == params
    assert sharded['state_gb'] * GB == pytest.approx(
        16 * params / 8 + 2 * outer * 4 + 3 * unit * 4)
    plain = Config.fromfile(POINTMAP_1B)
    plain.pop('strategy')
    plain.pop('runner_type')
    one = estimate_memory.estimate(plain, 1, recording=sharded['recording'])
    ddp = estimate_memory.estimate(plain, 8, recording=sharded['recording'])
    assert (one['setup'].strategy, ddp['setup'].strategy) == ('single', 'ddp')
    assert one['state_gb'] * GB == pytest.approx(16 * params)
    assert ddp['state_gb'] * GB == pytest.approx(20 * params)
    # the same activations whatever the strategy
    assert one['kept_gb'] == sharded['kept_gb'] == ddp['kept_gb']
    # FSDP on one GPU shards nothing: more state than DDP's 16 B
    assert estimate_memory.estimate(
        fsdp, 1, recording=sharded['recording'])['state_gb'] > one['state_gb']


def test_strategy_checkpointing_counts_like_with_cp():
    """The issue's case: FSDP with strategy.activation_checkpointing was
    read as unchecked. Both ways of checkpointing give the same activations,
    a small fraction of the unchecked ones."""
    with_cp = Config.fromfile(POSE_1B)
    assert with_cp.model.backbone.with_cp
    by_strategy = Config.fromfile(POSE_1B)
    by_strategy.model.backbone.with_cp = False
    by_strategy.strategy.activation_checkpointing = dict(
        check_fn='sapiens2_block_checkpoint_fn')
    off = Config.fromfile(POSE_1B)
    off.model.backbone.with_cp = False
    a = estimate_memory.estimate(with_cp, 8)
    b = estimate_memory.estimate(by_strategy, 8, recording=a['recording'])
    c = estimate_memory.estimate(off, 8, recording=a['recording'])
    assert (a['setup'].checkpointing, b['setup'].checkpointing,
            c['setup'].checkpointing) == ('backbone.with_cp', 'strategy',
                                          None)
    assert a['kept_gb'] == b['kept_gb'] and a['peak_gb'] == b['peak_gb']
    assert c['kept_gb'] > 10 * a['kept_gb']
    # unchecked, the official batch of 7 does not fit (the issue: at most 3
    # under DDP; 4 with the model state sharded)
    assert not c['fits'] and c['max_batch'] == 4
    c['recording'] = a['recording']
    plain = Config.fromfile(POSE_1B)
    plain.model.backbone.with_cp = False
    plain.pop('strategy')
    assert estimate_memory.estimate(
        plain, 8, recording=a['recording'])['max_batch'] == 2


def test_precision_and_batch_come_from_the_config():
    seg = Config.fromfile(SEG_1B)
    pointmap = Config.fromfile(POINTMAP_1B)
    r_seg = estimate_memory.estimate(seg, 8)
    r_pm = estimate_memory.estimate(pointmap, 8)
    assert r_seg['setup'].autocast == torch.bfloat16
    assert r_seg['setup'].param_dtype == torch.bfloat16
    assert r_pm['setup'].compute_dtype == torch.float32
    assert r_seg['setup'].batch == seg.train_dataloader.batch_size == 8
    assert r_seg['kept_gb'] == pytest.approx(8 * r_seg['kept_per_sample_gb'])
    # bf16 activations are half the fp32 ones of the same model
    seg_fp32 = Config.fromfile(SEG_1B)
    seg_fp32.optim_wrapper.type = 'OptimWrapper'
    seg_fp32.optim_wrapper.pop('dtype')
    seg_fp32.strategy.model_wrapper.mixed_precision = None
    r32 = estimate_memory.estimate(seg_fp32, 8)
    assert r32['setup'].compute_dtype == torch.float32
    assert r32['kept_per_sample_gb'] == pytest.approx(
        2 * r_seg['kept_per_sample_gb'], rel=0.05)
    # AmpOptimWrapper without a dtype is fp16, as mmengine's autocast
    seg_fp32.optim_wrapper.type = 'AmpOptimWrapper'
    assert memory_model.read_setup(seg_fp32, 8).autocast == torch.float16
    smaller = estimate_memory.estimate(seg, 8, batch=2,
                                       recording=r_seg['recording'])
    assert smaller['setup'].batch == 2
    assert smaller['peak_gb'] < r_seg['peak_gb']


def test_yes_or_no_with_the_exit_status(capsys):
    results = estimate_memory.main([SEG_1B])
    assert results[SEG_1B]['fits']
    assert 'fits 8 x 80 GB at batch 8 per GPU: yes' in capsys.readouterr().out
    with pytest.raises(SystemExit) as err:
        estimate_memory.main([SEG_1B, '--gpus', '1', '--gpu-memory', '24'])
    assert err.value.code == 1
    out = capsys.readouterr().out
    assert 'fits 1 x 24 GB at batch 8 per GPU: NO' in out
    assert 'peak at batch 8' in out and 'largest batch that fits' in out
    with pytest.raises(SystemExit) as err:
        estimate_memory.main([SEG_1B, '--gpus', '0'])
    assert '--gpus must be >= 1, got 0' in str(err.value.code)


def test_pretraining_configs_are_estimated():
    """The pretrainer runs its whole loss on the pipeline's views (it has no
    ``_forward``, which crashed the tool); the EMA teacher is frozen state
    (4 B per parameter) beside the student's 16 B."""
    cfg = Config.fromfile(osp.join(CONFIGS, 'pretrain',
                                   'sapiens2-0.1b_pretrain-1024x768.py'))
    assert memory_model.pretrain_views(cfg, (1024, 768)) == [
        (1024, 768)] * 2 + [(256, 192)] * 4
    r = estimate_memory.estimate(cfg, 1)
    rec = r['recording']
    assert rec.frozen > 0 and rec.trainable + rec.frozen == rec.params
    # the teacher is a copy of the student backbone and DINO head
    assert rec.frozen < rec.trainable
    # 2 global + 4 local views: a block runs twice per step (masked global
    # crops, then local crops), each call recorded
    assert sum(k.startswith('block0#') for k in rec.parts) == 2
    assert r['kept_per_sample_gb'] > 0 and r['setup'].task == 'pretrain'


def test_estimate_is_near_a_measured_cpu_peak():
    """One training step of a bare backbone on the CPU: the allocator's peak
    (torch profiler) against the estimate for the same model, batch and
    shape, checkpointing off and on (tools/benchmarks/
    estimate_memory_calibration.py; the docs list every case)."""
    calibration = load_tool('benchmarks/estimate_memory_calibration')
    for with_cp in (False, True):
        cfg = calibration.trunk_config('trunk', with_cp, False, 2)
        torch.manual_seed(0)
        inputs = torch.randn(2, 3, *calibration.TRUNKS['trunk'][1])
        row = calibration.row('trunk', cfg, 2, (inputs, None), False)
        assert 0.85 < row['ratio'] < 1.15, row


@pytest.mark.parametrize('path', SHIPPED, ids=[_rel(p) for p in SHIPPED])
def test_every_shipped_config_fits_the_gpus_its_name_gives(path):
    """On 80 GB GPUs, as many as the config name gives (8 without a count),
    at the config's own batch and strategy; non-tiny configs have their row
    of the fits table in docs/large_models.md."""
    cfg = Config.fromfile(path)
    gpus = estimate_memory.gpus_in_name(path) or estimate_memory.DEFAULT_GPUS
    result = estimate_memory.estimate(cfg, gpus, 80.0)
    assert result['fits'], estimate_memory.report(_rel(path), result)
    if 'tiny' in osp.basename(path):
        return
    with open(osp.join(REPO_DIR, 'docs', 'large_models.md')) as f:
        rows = [line for line in f if line.startswith(f'| `{_rel(path)}` |')]
    assert rows == [estimate_memory.table_row(_rel(path), cfg) + '\n']
