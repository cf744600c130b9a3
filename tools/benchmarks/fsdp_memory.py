"""Host memory per rank to start and to resume an FSDP run, against one process.

Each job runs in fresh processes (2 gloo ranks, or 1) on a Sapiens2 seg model
(mmseg EncoderDecoder, fp32, AdamW) and reports, per rank, the peak resident
set (``VmHWM``) and the peak anonymous resident memory (sampled every 2 ms;
what the process allocated, without mapped files such as the torch
libraries) over two phases:

* ``start``: build, initialise and wrap the model (and build the optimizer);
* ``resume``: read a checkpoint of that model with its AdamW state (the peak
  is reset in between, ``/proc/self/clear_refs``).

Jobs:

* ``single``: one process, the whole model built and ``init_weights`` run,
  then the whole ``.pth`` read (``torch.load``) into model and optimizer;
* ``fsdp_full``: 2 ranks as mmengine's FSDPStrategy does it
  (``init_on_meta=False``, ``state_dict_cfg='full'``): every rank builds the
  whole model, and reads the whole ``.pth`` on resume;
* ``fsdp_sharded``: 2 ranks with ``init_on_meta=True`` and
  ``state_dict_cfg='sharded'``: each rank materialises one unit at a time and
  reads its own shard file.

All three resume one state, saved once by a 2-rank job in both layouts; the
script checks that they end with equal weights and optimizer state (sums)
and prints the table (``--out`` writes it as JSON). Example (about 3 minutes
and 6 GB on 2 cores)::

    python tools/benchmarks/fsdp_memory.py --out fsdp_memory.json
"""
import argparse
import json
import os
import os.path as osp
import subprocess
import sys
import tempfile
import threading
import time

JOBS = ('single', 'fsdp_full', 'fsdp_sharded')
HERE = osp.dirname(osp.abspath(__file__))
REPO = osp.dirname(osp.dirname(HERE))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--embed-dims', type=int, default=768)
    parser.add_argument('--num-layers', type=int, default=12)
    parser.add_argument('--out', help='write the table as JSON here')
    parser.add_argument('--worker', choices=('save', *JOBS),
                        help=argparse.SUPPRESS)
    parser.add_argument('--dir', help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ---------------------------------------------------------------- memory
def _status() -> dict:
    values = {}
    with open('/proc/self/status') as f:
        for line in f:
            key, _, rest = line.partition(':')
            if key in ('VmHWM', 'VmRSS', 'RssAnon', 'RssFile'):
                values[key] = int(rest.split()[0]) * 1024
    return values


class PeakMonitor:
    """Samples RssAnon every 2 ms; ``phase()`` returns and resets the
    peaks (the kernel's VmHWM is reset through clear_refs)."""

    def __init__(self):
        self.peak_anon = _status()['RssAnon']
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop:
            self.peak_anon = max(self.peak_anon, _status()['RssAnon'])
            time.sleep(0.002)

    def phase(self) -> dict:
        now = _status()
        out = dict(peak_rss_mib=now['VmHWM'] / 2**20,
                   peak_anon_mib=max(self.peak_anon, now['RssAnon']) / 2**20)
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')  # reset VmHWM to the current RSS
        self.peak_anon = _status()['RssAnon']
        return out

    def stop(self):
        self._stop = True
        self._thread.join()


# ---------------------------------------------------------------- model
def model_cfg(args) -> dict:
    heads = max(1, args.embed_dims // 64)
    return dict(
        type='mmseg.EncoderDecoder',
        data_preprocessor=dict(type='mmseg.SegDataPreProcessor',
                               mean=[123.675, 116.28, 103.53],
                               std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
        backbone=dict(
            type='Sapiens2', img_size=(64, 64), patch_size=16,
            arch=dict(embed_dims=args.embed_dims, num_layers=args.num_layers,
                      num_heads=heads, feedforward_channels=4 * args.embed_dims,
                      num_tokenizer_layers=1),
            out_type='featmap', out_indices=[-1], init_cfg=None),
        decode_head=dict(
            type='mmseg.FCNHead', in_channels=args.embed_dims, channels=64,
            num_convs=1, concat_input=False, num_classes=3, norm_cfg=None,
            loss_decode=dict(type='mmseg.CrossEntropyLoss')))


OPTIM = dict(optimizer=dict(type='AdamW', lr=1e-4, weight_decay=0.1))


def fsdp_strategy(tmp: str, init_on_meta: bool, state_dict_cfg: str):
    from mmengine.config import Config

    from sapiens2_mm.registry import STRATEGIES
    snippet = Config.fromfile(osp.join(REPO, 'configs', '_base_',
                                       'strategies', 'fsdp_bf16.py'))
    cfg = dict(snippet.strategy.to_dict())
    cfg['model_wrapper']['mixed_precision'] = None  # fp32 on the CPU
    cfg.update(init_on_meta=init_on_meta, state_dict_cfg=state_dict_cfg,
               work_dir=osp.join(tmp, 'work'),
               env_kwargs=dict(launcher='pytorch', randomness=dict(seed=0),
                               dist_cfg=dict(backend='gloo')))
    return STRATEGIES.build(cfg)


def optimizer_step(optimizer):
    """Create the AdamW state: one step with each parameter as its own
    gradient (the same values whether the parameter is sharded or not)."""
    for group in optimizer.param_groups:
        for param in group['params']:
            param.grad = param.detach().clone()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def exp_avg_sq_sum(optimizer) -> float:
    return float(sum(state['exp_avg_sq'].double().sum()
                     for state in optimizer.state.values()))


# ---------------------------------------------------------------- workers
def worker(args) -> None:
    import torch
    torch.set_num_threads(1)
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    if args.worker == 'single':
        return single(args, PeakMonitor())
    import torch.distributed as dist
    dist.init_process_group('gloo')
    monitor = PeakMonitor()
    try:
        if args.worker == 'save':
            save(args)
        else:
            fsdp_resume(args, monitor)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def save(args) -> None:
    """The state every job resumes: a meta start, one AdamW step, saved
    sharded and full."""
    strategy = fsdp_strategy(args.dir, True, 'sharded')
    model, wrapper = strategy.prepare(model_cfg(args), optim_wrapper=OPTIM)
    optimizer_step(wrapper.optimizer)
    meta = dict(meta=dict(iter=1, epoch=0))
    strategy.save_checkpoint(osp.join(args.dir, 'sharded.pth'),
                             save_param_scheduler=False, extra_ckpt=meta)
    strategy.sharded = False  # the same state through the 'full' path
    strategy.save_checkpoint(osp.join(args.dir, 'full.pth'),
                             save_param_scheduler=False,
                             extra_ckpt=dict(meta=dict(iter=1, epoch=0)))


def fsdp_resume(args, monitor) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    sharded = args.worker == 'fsdp_sharded'
    baseline = monitor.phase()
    strategy = fsdp_strategy(args.dir, sharded,
                             'sharded' if sharded else 'full')
    model, wrapper = strategy.prepare(model_cfg(args), optim_wrapper=OPTIM)
    start = monitor.phase()
    strategy.resume(osp.join(args.dir, 'sharded.pth' if sharded else
                             'full.pth'), resume_param_scheduler=False)
    resume = monitor.phase()
    monitor.stop()
    exp_avg_sq = torch.tensor(exp_avg_sq_sum(wrapper.optimizer),
                              dtype=torch.float64)
    dist.all_reduce(exp_avg_sq)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(rank0_only=True)):
        state = model.state_dict()
    report(args, dist.get_rank(), baseline, start, resume,
           weights=float(sum(v.double().sum() for v in state.values())),
           exp_avg_sq=float(exp_avg_sq))


def single(args, monitor) -> None:
    import torch

    from sapiens2_mm.registry import MODELS
    baseline = monitor.phase()
    torch.manual_seed(0)
    model = MODELS.build(model_cfg(args))
    model.init_weights()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                  weight_decay=0.1)
    start = monitor.phase()
    checkpoint = torch.load(osp.join(args.dir, 'full.pth'),
                            map_location='cpu')
    model.load_state_dict(checkpoint['state_dict'])
    saved = checkpoint['optimizer']  # keyed by parameter name (FSDP full)
    index = {name: i for i, (name, _) in enumerate(model.named_parameters())}
    optimizer.load_state_dict(dict(
        state={index[k]: v for k, v in saved['state'].items()},
        param_groups=[dict(g, params=[index[n] for n in g['params']])
                      for g in saved['param_groups']]))
    del checkpoint, saved
    resume = monitor.phase()
    monitor.stop()
    report(args, 0, baseline, start, resume,
           weights=float(sum(v.double().sum()
                             for v in model.state_dict().values())),
           exp_avg_sq=exp_avg_sq_sum(optimizer))


def report(args, rank, baseline, start, resume, **sums) -> None:
    with open(osp.join(args.dir, f'{args.worker}_rank{rank}.json'), 'w') as f:
        json.dump(dict(baseline=baseline, start=start, resume=resume, **sums),
                  f)


# ---------------------------------------------------------------- driver
def run_job(args, job: str, tmp: str) -> list:
    nproc = 1 if job == 'single' else 2
    script = [osp.abspath(__file__), '--worker', job, '--dir', tmp,
              '--embed-dims', str(args.embed_dims), '--num-layers',
              str(args.num_layers)]
    if nproc == 1:
        cmd = [sys.executable, *script]
    else:
        import socket
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            port = sock.getsockname()[1]
        cmd = [sys.executable, '-m', 'torch.distributed.run',
               f'--nproc_per_node={nproc}', f'--master_port={port}', *script]
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1',
               PYTHONPATH=os.pathsep.join(
                   [REPO, os.environ.get('PYTHONPATH', '')]))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f'{job} failed:\n{proc.stderr[-4000:]}')
    if job == 'save':
        return []
    rows = []
    for rank in range(nproc):
        with open(osp.join(tmp, f'{job}_rank{rank}.json')) as f:
            rows.append(json.load(f))
    return rows


def file_sizes(tmp: str) -> dict:
    folder = osp.join(tmp, 'sharded.pth')
    return dict(full_pth_mib=osp.getsize(osp.join(tmp, 'full.pth')) / 2**20,
                shard_files_mib={name: osp.getsize(osp.join(folder, name))
                                 / 2**20 for name in sorted(os.listdir(folder))
                                 if name.endswith('.distcp')})


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    with tempfile.TemporaryDirectory() as tmp:
        run_job(args, 'save', tmp)
        results = {job: run_job(args, job, tmp) for job in JOBS}
        sizes = file_sizes(tmp)
    reference = results['single'][0]
    for job, rows in results.items():
        for key in ('weights', 'exp_avg_sq'):
            got = rows[0][key]
            if abs(got - reference[key]) > 1e-6 * max(1.0, abs(reference[key])):
                sys.exit(f'{job} resumed another {key} sum: {got} vs '
                         f'{reference[key]} (single process)')
    table = summarize(args, results, sizes)
    print_table(table)
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(table, f, indent=2)
    return table


def summarize(args, results, sizes) -> dict:
    single = results['single'][0]
    rows = {}
    for job, ranks in results.items():
        worst = {phase: {key: max(r[phase][key] for r in ranks)
                         for key in ('peak_rss_mib', 'peak_anon_mib')}
                 for phase in ('baseline', 'start', 'resume')}
        base = max(r['baseline']['peak_anon_mib'] for r in ranks)
        row = dict(ranks=len(ranks), **worst)
        for phase in ('start', 'resume'):
            growth = worst[phase]['peak_anon_mib'] - base
            ref = single[phase]['peak_anon_mib'] - single['baseline'][
                'peak_anon_mib']
            row[f'{phase}_anon_growth_mib'] = growth
            row[f'{phase}_growth_vs_single'] = growth / ref
        rows[job] = row
    return dict(embed_dims=args.embed_dims, num_layers=args.num_layers,
                sizes=sizes, results=rows)


def print_table(table) -> None:
    print(f'Sapiens2 seg model, embed {table["embed_dims"]}, '
          f'{table["num_layers"]} blocks; checkpoint with AdamW state: '
          f'{table["sizes"]["full_pth_mib"]:.0f} MiB as one .pth, shard '
          'files ' + ', '.join(f'{v:.0f}' for v in table['sizes'][
              'shard_files_mib'].values()) + ' MiB')
    print('| job | ranks | start: peak RSS / anon growth (MiB) | vs single '
          '| resume: peak RSS / anon growth (MiB) | vs single |')
    print('|---|---|---|---|---|---|')
    for job, row in table['results'].items():
        print(f'| {job} | {row["ranks"]} | '
              f'{row["start"]["peak_rss_mib"]:.0f} / '
              f'{row["start_anon_growth_mib"]:.0f} | '
              f'{row["start_growth_vs_single"]:.2f} | '
              f'{row["resume"]["peak_rss_mib"]:.0f} / '
              f'{row["resume_anon_growth_mib"]:.0f} | '
              f'{row["resume_growth_vs_single"]:.2f} |')


if __name__ == '__main__':
    main()
    sys.stdout.flush()
    if '--worker' in sys.argv:
        os._exit(0)  # pytorch#190489, see sapiens2_mm.engine.runners.launch
