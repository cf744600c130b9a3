"""Acceptance stage ``fsdp_checkpoints``: what only a GPU run shows of FSDP
checkpoints, on the tiny seg config through tools/dist_train.sh (1 process):

* ``offload``: FSDP with CPU offload (``model_wrapper.cpu_offload=True``;
  parameters and gradients on the host, bf16 compute on the GPU) trains 4
  iterations; a second run resumes the iteration-2 checkpoint of the first
  and trains to 4: both end with the same weights;
* ``sharded``: the same with ``state_dict_cfg='sharded'`` (every rank writes
  its own shards, torch.distributed.checkpoint), the two iteration-4
  checkpoints consolidated with
  tools/model_converters/consolidate_sharded_checkpoint.py and compared;
  skipped, with the reason, where the strategy has no sharded checkpoints.

Only these checkpoints are written, and each is read by the stage.
With --dry-run: the same on the CPU (gloo, fp32, no offload: FSDP offload
needs a GPU).
"""
import os
import os.path as osp
import subprocess
import sys

from common import DATA, ROOT, TINY

SEG = osp.join(ROOT, TINY['seg'])
STRATEGIES = osp.join(ROOT, 'configs', '_base_', 'strategies')


def _leaf(work: str, name: str, strategy: str, dry_run: bool) -> str:
    snippet = 'fsdp_fp32.py' if dry_run else 'fsdp_bf16.py'
    seg = osp.join(DATA, 'seg_sample') + '/'
    text = f'''_base_ = [{SEG!r}, {osp.join(STRATEGIES, snippet)!r}]
train_dataloader = dict(batch_size=2, dataset=dict(data_root={seg!r}))
train_cfg = dict(max_iters=4, val_interval=1000)
val_cfg = None
val_dataloader = None
val_evaluator = None
param_scheduler = []
default_hooks = dict(logger=dict(interval=1), checkpoint=dict(
    interval=2, max_keep_ckpts=2, save_last=False))
strategy = dict({strategy})
'''
    path = osp.join(work, f'{name}.py')
    with open(path, 'w') as f:
        f.write(text)
    return path


def _train(leaf: str, work_dir: str, *extra: str) -> None:
    env = dict(os.environ, PYTHON=sys.executable, PORT=str(_free_port()))
    proc = subprocess.run(
        ['bash', osp.join(ROOT, 'tools', 'dist_train.sh'), leaf, '1',
         '--work-dir', work_dir, *extra], cwd=ROOT, env=env,
        capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f'dist_train.sh exited {proc.returncode}:\n'
                           f'{proc.stderr[-2000:]}')


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _weights(path: str) -> dict:
    import torch
    return torch.load(path, map_location='cpu', weights_only=True)[
        'state_dict']


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys(), sorted(set(a) ^ set(b))[:5]
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def _round_trip(work: str, name: str, strategy: str, dry_run: bool,
                consolidate=None) -> dict:
    leaf = _leaf(work, name, strategy, dry_run)
    straight, resumed = osp.join(work, f'{name}_a'), osp.join(work,
                                                              f'{name}_b')
    _train(leaf, straight)
    _train(leaf, resumed, '--resume', osp.join(straight, 'iter_2.pth'))
    ends = [osp.join(folder, 'iter_4.pth') for folder in (straight, resumed)]
    if consolidate is not None:
        ends = [consolidate(path) for path in ends]
    diff = _max_diff(*[_weights(path) for path in ends])
    return dict(max_param_diff=diff, ok=diff <= (1e-6 if dry_run else 1e-3))


def _sharded_supported() -> str:
    """Why sharded checkpoints cannot be tried, or '' if they can."""
    from sapiens2_mm.engine.strategies.fsdp_strategy import (
        check_state_dict_cfg,
    )
    try:
        check_state_dict_cfg('sharded')
    except ValueError as err:
        return f'Sapiens2FSDPStrategy has no sharded checkpoints yet ({err})'
    tool = osp.join(ROOT, 'tools', 'model_converters',
                    'consolidate_sharded_checkpoint.py')
    if not osp.isfile(tool):
        return f'{tool} is missing'
    return ''


def stage_fsdp_checkpoints(args, rows) -> None:
    work = osp.join(args.out_dir, 'work', 'fsdp_checkpoints')
    os.makedirs(work, exist_ok=True)
    offload = '' if args.dry_run else 'model_wrapper=dict(cpu_offload=True)'
    rows.add(item='FSDP CPU offload save + resume',
             offload=not args.dry_run,
             **_round_trip(work, 'offload', offload, args.dry_run))
    reason = _sharded_supported()
    if reason:
        rows.add(item='FSDP sharded checkpoint round trip',
                 status='skipped', reason=reason, ok=True)
        return
    tool = osp.join(ROOT, 'tools', 'model_converters',
                    'consolidate_sharded_checkpoint.py')

    def consolidate(folder: str) -> str:
        out = folder[:-len('.pth')] + '_consolidated.pth'
        subprocess.run([sys.executable, tool, folder, out], cwd=ROOT,
                       check=True, capture_output=True)
        return out

    shards = None
    row = _round_trip(work, 'sharded', "state_dict_cfg='sharded'",
                      args.dry_run, consolidate)
    folder = osp.join(work, 'sharded_a', 'iter_4.pth')
    if osp.isdir(folder):
        shards = sorted(n for n in os.listdir(folder)
                        if n.endswith('.distcp'))
    rows.add(item='FSDP sharded checkpoint round trip', shard_files=shards,
             **row)
