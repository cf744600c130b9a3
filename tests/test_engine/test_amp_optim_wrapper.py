"""Loss scaling under mixed precision (Sapiens2AmpOptimWrapper): none for
bf16, ShardedGradScaler for fp16 under FSDP, whatever asked for mixed
precision (--amp or the config); an inf on one rank skips the step on both;
pointmap stays fp32."""
import json
import os
import os.path as osp

import pytest
import torch
import torch.multiprocessing as mp
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from sapiens2_mm.apis import run_config, train_config
from sapiens2_mm.engine.optimizers import Sapiens2AmpOptimWrapper
from sapiens2_mm.utils.config_file import load_config

from ..test_tools.workflow_utils import REPO_DIR, free_port

CONFIGS = osp.join(REPO_DIR, 'configs')
TINY_SEG = osp.join(CONFIGS, 'seg', 'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
TINY_POINTMAP = osp.join(CONFIGS, 'pointmap',
                         'sapiens2-tiny_1xb2-30_densesample-128x96.py')
STRATEGIES = osp.join(CONFIGS, '_base_', 'strategies')


def _wrapper(**kwargs):
    param = torch.nn.Parameter(torch.zeros(3))
    return Sapiens2AmpOptimWrapper(
        optimizer=torch.optim.SGD([param], lr=0.1), **kwargs)


def test_the_scaler_follows_the_dtype_and_sharding():
    bf16 = _wrapper(dtype='bfloat16', use_fsdp=True)
    assert not bf16.scales_loss and bf16.cast_dtype == torch.bfloat16
    assert bf16.state_dict()['loss_scaler'] == {}  # nothing to save
    sharded = _wrapper(dtype='float16', use_fsdp=True)
    assert sharded.scales_loss
    assert isinstance(sharded.loss_scaler, ShardedGradScaler)
    plain = _wrapper(dtype='float16', loss_scale=512.0)
    assert plain.scales_loss and not isinstance(plain.loss_scaler,
                                                ShardedGradScaler)
    assert plain.loss_scaler.get_scale() == 512.0
    with pytest.raises(ValueError, match="got 'half16'"):
        _wrapper(dtype='half16')


def _leaf(tmp_path, config, *bases, extra=''):
    leaf = tmp_path / 'leaf.py'
    leaf.write_text(f'_base_ = {[config, *bases]!r}\n{extra}')
    return load_config(str(leaf))


@pytest.mark.parametrize('amp_from', ['config', '--amp'])
def test_bf16_is_never_scaled_whoever_asks(tmp_path, monkeypatch, amp_from):
    """The tiny seg config with the bf16 FSDP snippet: AmpOptimWrapper from
    the config, or --amp on a config without it, gives the same wrapper
    (before: the config's AmpOptimWrapper kept a plain GradScaler, --amp
    set use_fsdp and a fixed scale of 1)."""
    monkeypatch.setattr(train_config, 'get_device', lambda: 'cuda')
    extra = ("optim_wrapper = dict(type='AmpOptimWrapper', dtype='bfloat16')"
             if amp_from == 'config' else
             "optim_wrapper = dict(type='OptimWrapper')")
    cfg = _leaf(tmp_path, TINY_SEG, osp.join(STRATEGIES, 'fsdp_bf16.py'),
                extra=extra)
    notes = []
    train_config.prepare_train_config(cfg, work_dir=str(tmp_path / 'w'),
                                      launcher='pytorch',
                                      amp=amp_from == '--amp', notes=notes)
    wrapper = cfg.optim_wrapper
    assert wrapper.type == 'sapiens2_mm.Sapiens2AmpOptimWrapper'
    assert wrapper.dtype == 'bfloat16' and wrapper.use_fsdp
    assert 'loss_scale' not in wrapper
    assert any('bfloat16 autocast, no loss scaling' in n for n in notes)


@pytest.mark.parametrize('strategy,scaler', [
    ('fsdp_bf16.py', 'ShardedGradScaler'), (None, 'GradScaler')])
def test_fp16_gets_the_sharded_scaler_under_fsdp(tmp_path, strategy, scaler):
    bases = [osp.join(STRATEGIES, strategy)] if strategy else []
    cfg = _leaf(tmp_path, TINY_SEG, *bases, extra=(
        "optim_wrapper = dict(type='AmpOptimWrapper', dtype='float16')"))
    notes = []
    train_config.prepare_train_config(
        cfg, work_dir=str(tmp_path / 'w'),
        launcher='pytorch' if strategy else 'none', notes=notes)
    assert cfg.optim_wrapper.use_fsdp == bool(strategy)
    assert any(n.endswith(f'float16 autocast, {scaler}.') for n in notes)


@pytest.mark.parametrize('how', ['fsdp_bf16.py', '--amp', 'config'])
def test_pointmap_in_bf16_is_refused(tmp_path, monkeypatch, how):
    monkeypatch.setattr(train_config, 'get_device', lambda: 'cuda')
    bases = [osp.join(STRATEGIES, how)] if how.endswith('.py') else []
    extra = ("optim_wrapper = dict(type='AmpOptimWrapper', dtype='bfloat16')"
             if how == 'config' else '')
    cfg = _leaf(tmp_path, TINY_POINTMAP, *bases, extra=extra)
    with pytest.raises(run_config.RunConfigError,
                       match='pointmap trains in fp32') as err:
        train_config.prepare_train_config(
            cfg, work_dir=str(tmp_path / 'w'), amp=how == '--amp',
            launcher='pytorch' if bases else 'none')
    assert 'fsdp_fp32.py' in str(err.value)
    ok = _leaf(tmp_path, TINY_POINTMAP, osp.join(STRATEGIES, 'fsdp_fp32.py'))
    train_config.prepare_train_config(ok, work_dir=str(tmp_path / 'w'),
                                      launcher='pytorch')
    assert ok.strategy.model_wrapper.mixed_precision is None


def _inf_worker(rank, world, port, out_dir, kind):
    """One rank: a Linear(4, 2) under Sapiens2FSDPStrategy (2 shards), an
    fp16 mixed-precision wrapper built by the strategy, and a gradient that
    is inf in one element on rank 0 only (in rank 0's shard after the
    reduce-scatter): a finite input of 1e34 whose weight gradient overflows
    float32 once the loss is scaled by 65536. (An inf input would also give
    0 * inf = NaN in the other output row's gradient, on rank 1's shard.)"""
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port),
                      RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    import torch.distributed as dist

    from sapiens2_mm.engine.strategies import Sapiens2FSDPStrategy
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    dist.init_process_group('gloo', rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    strategy = Sapiens2FSDPStrategy(
        model_wrapper=dict(use_orig_params=False),
        work_dir=osp.join(out_dir, f'work{rank}'),
        env_kwargs=dict(launcher='pytorch', dist_cfg=dict(backend='gloo')))
    wrapper_cfg = dict(type='AmpOptimWrapper', dtype='float16',
                       optimizer=dict(type='SGD', lr=0.1))
    model, optim = strategy.prepare(model, optim_wrapper=wrapper_cfg)
    if kind == 'plain':  # the defect: a scaler that checks the local shard
        optim.loss_scaler = torch.amp.GradScaler('cpu')
    shard = next(model.parameters())
    before = shard.detach().clone()
    x = torch.ones(3, 4)
    if rank == 0:
        x[0, 3] = 1e34  # d (65536 loss) / d weight[0, 3] = inf
    loss = model(x)[:, 0].sum()
    optim.update_params(loss)
    result = dict(rank=rank, scaler=type(optim.loss_scaler).__name__,
                  stepped=bool((shard.detach() != before).any()),
                  scale=float(optim.loss_scaler.get_scale()))
    with open(osp.join(out_dir, f'rank{rank}.json'), 'w') as f:
        json.dump(result, f)
    dist.destroy_process_group()


def _run_inf(tmp_path, kind):
    mp.start_processes(_inf_worker, nprocs=2, join=True, start_method='fork',
                       args=(2, free_port(), str(tmp_path), kind))
    return [json.load(open(tmp_path / f'rank{r}.json')) for r in (0, 1)]


def test_an_inf_on_one_rank_skips_the_step_on_both(tmp_path):
    ranks = _run_inf(tmp_path, 'sharded')
    assert [r['scaler'] for r in ranks] == ['ShardedGradScaler'] * 2
    # both ranks skipped the step and halved the scale together
    assert [r['stepped'] for r in ranks] == [False, False]
    assert [r['scale'] for r in ranks] == [32768.0, 32768.0]
    # the control: a per-shard scaler lets rank 1 step while rank 0 skips,
    # and their scales part (what FSDP with mmengine's AmpOptimWrapper did)
    control = tmp_path / 'plain'
    control.mkdir()
    plain = _run_inf(control, 'plain')
    assert [r['stepped'] for r in plain] == [False, True]
    assert plain[0]['scale'] != plain[1]['scale']
