"""Does a config's training fit N GPUs of M GB? Estimated on the meta device.

Usage::

    python tools/analysis_tools/estimate_memory.py CONFIG [CONFIG ...]
        [--gpus N] [--gpu-memory 80] [--batch B] [--reserve GB] [--shape H W]
    python tools/analysis_tools/estimate_memory.py --table CONFIG [CONFIG ...]

Exit status 0 when every config's training fits, 1 when one does not (the
figures are printed either way), 2 on bad input. ``--gpus`` defaults to the
GPU count in each config's name (``8xb7`` -> 8; a name without one: 8).
``--table`` prints the markdown table of docs/large_models.md instead: per
config the run, the per-GPU batch, the peak on the GPUs its name gives (80
GB each) and whether it fits 8 x 80 GB, 1 x 80 GB and 1 x 24 GB.

What the run does is read from the config, as the runner would build it:

* the per-GPU batch: ``train_dataloader.batch_size`` (or ``--batch``);
* the strategy: none (one GPU, or DDP on several), or FSDP
  (``Sapiens2FSDPStrategy``; its ``sharding_strategy``, ``mixed_precision``
  and ``activation_checkpointing``) or DeepSpeed ZeRO-3;
* mixed precision: ``AmpOptimWrapper`` (autocast dtype, fp16 when unset, as
  mmengine) and FSDP's ``mixed_precision.param_dtype``;
* activation checkpointing: ``model.backbone.with_cp`` or the strategy's
  ``activation_checkpointing.check_fn`` (both recompute each block).

Model state per GPU (``memory_model.model_state``): 16 bytes per trainable
parameter (fp32 weights and gradients, AdamW's two moments) and 4 per frozen
one (the pretraining EMA teacher), plus DDP's gradient buckets (4 bytes per
trainable parameter) on several GPUs, plus autocast's low-precision weight
copies (2 bytes) where the parameters are fp32. FSDP FULL_SHARD divides the
state by the GPU count and adds the units gathered at one time: the root unit
(parameters in no block: patch embedding, head, norms) and up to two block
units with one unit's gradient, in the parameter dtype.

Activations (``memory_model.record_activations``): one training forward of a
one-sample batch runs on the meta device with checkpointing off, while
``torch.autograd.graph.saved_tensors_hooks`` records the bytes autograd keeps
for backward (parameters excluded, views counted once, attention counted as
the fused SDPA kernels keep it: q, k, v, output and the log-sum-exp, never
the score matrix), per trunk block call, 4K tokenizer, patch embedding and
the rest (head, neck, loss inputs). The peak of one training step is then::

    state + batch x kept + transient + loss maps + reserve

* kept: everything recorded; with checkpointing, the blocks keep only their
  inputs (and the 4K tokenizer, always checkpointed per chunk of windows as
  the official model, keeps its input);
* transient: what one block's backward holds at once, its recorded
  activations for the whole batch, twice with checkpointing (recomputed
  activations and their gradients), or one 4K tokenizer chunk;
* loss maps: the float32 maps a task's loss computes from the head output
  (``LOSS_MAPS`` copies of the output per sample, measured on the CPU:
  tools/benchmarks/estimate_memory_calibration.py);
* reserve: CUDA context, cuBLAS / NCCL workspaces and allocator
  fragmentation, 1 GB + 10 % of the GPU by default (``--reserve``).

The activation model was checked against the real peak of one training step
of small models on the CPU (the allocator's live bytes, read from the torch
profiler), fp32 and bf16, checkpointing on and off; the figures are in
docs/large_models.md. It is an estimate, not a GPU measurement.
"""
import argparse
import os.path as osp
import re
import sys
from typing import Dict, Optional

import torch

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))  # sibling helpers
GB = 1024**3
DEFAULT_GPUS = 8  # configs without an NxB count are launched on 8 GPUs


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Whether a config trains within N GPUs of M GB '
        '(estimated on the meta device)')
    parser.add_argument('config', nargs='+', help='config file path(s)')
    parser.add_argument('--table', action='store_true',
                        help='print the fits table (markdown) instead')
    parser.add_argument('--gpus', type=int,
                        help='number of GPUs (default: the N of NxB in the '
                        f'config name, else {DEFAULT_GPUS})')
    parser.add_argument('--gpu-memory', type=float, default=80.0,
                        help='memory of one GPU in GB (default 80)')
    parser.add_argument('--batch', type=int,
                        help='per-GPU batch (default: the config\'s '
                        'train_dataloader.batch_size)')
    parser.add_argument('--reserve', type=float,
                        help='GB set aside for the CUDA context, workspaces '
                        'and fragmentation (default 1 + 10%% of the GPU)')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'),
                        help="input size (default: the backbone's img_size)")
    return parser.parse_args(argv)


def gpus_in_name(path: str) -> Optional[int]:
    """N of the ``NxbB`` field of a config name (``..._8xb7-20k_...``)."""
    found = re.search(r'_(\d+)xb\d+', osp.basename(path))
    return int(found.group(1)) if found else None


def default_reserve(gpu_memory: float) -> float:
    """1 GB (CUDA context, workspaces) + 10 % of the GPU (fragmentation)."""
    return 1.0 + 0.1 * gpu_memory


def estimate(cfg, gpus: int, gpu_memory: float = 80.0,
             reserve: Optional[float] = None, batch: Optional[int] = None,
             shape=None, recording=None) -> Dict:
    """Peak memory per GPU of training ``cfg`` and whether it fits.

    Args:
        cfg: an mmengine Config.
        gpus: GPUs the run is launched on.
        gpu_memory: GB of one GPU.
        reserve: GB held back (default :func:`default_reserve`).
        batch: per-GPU batch (default: the config's).
        shape: (H, W) input (default: the backbone's ``img_size``).
        recording: the ``recording`` of an earlier estimate of ``cfg`` at the
            same shape (the meta forward does not depend on the GPUs).

    Returns:
        dict: ``setup`` (what the run does), ``params``, ``state_gb``,
        ``kept_gb`` / ``transient_gb`` / ``loss_gb`` (for ``batch``),
        ``kept_per_sample_gb``, ``no_cp_per_sample_gb``, ``peak_gb``,
        ``reserve_gb``, ``fits`` (bool), ``max_batch`` (largest batch that
        fits, 0 if none) and ``parts_gb`` (per-sample bytes recorded per
        part, no checkpointing).
    """
    from memory_model import (
        activation_bytes,
        model_state,
        read_setup,
        record_activations,
    )
    setup = read_setup(cfg, gpus, batch)
    reserve = default_reserve(gpu_memory) if reserve is None else reserve
    if recording is None:
        recording = record_activations(cfg, setup, shape)
    state = model_state(recording, setup)

    def peak(b: int) -> Dict[str, float]:
        parts = activation_bytes(recording, setup, b)
        parts['state'] = state
        parts['total'] = sum(parts.values()) + reserve * GB
        return parts

    at_batch = peak(setup.batch)
    max_batch = 0
    while max_batch < 4096 and peak(max_batch + 1)['total'] <= \
            gpu_memory * GB:
        max_batch += 1
    return dict(
        setup=setup, params=recording.params, shape=recording.shape,
        state_gb=state / GB, kept_gb=at_batch['kept'] / GB,
        transient_gb=at_batch['transient'] / GB,
        loss_gb=at_batch['loss'] / GB,
        kept_per_sample_gb=activation_bytes(recording, setup, 1)['kept'] / GB,
        no_cp_per_sample_gb=recording.total / GB,
        output_numel=recording.output_numel,
        parts_gb={k: v / GB for k, v in recording.summary().items()},
        reserve_gb=reserve, peak_gb=at_batch['total'] / GB,
        gpu_memory=gpu_memory, fits=at_batch['total'] <= gpu_memory * GB,
        max_batch=max_batch, recording=recording)


def report(name: str, r: Dict) -> str:
    """The estimate as text, ending with the yes/no line."""
    s = r['setup']
    h, w = r['shape']
    parts = ', '.join(f'{k} {v:.2f}' for k, v in r['parts_gb'].items())
    answer = 'yes' if r['fits'] else 'NO'
    return '\n'.join([
        f'{name}  input {h}x{w}',
        f'  run                      {s.describe()}',
        f'  params                   {r["params"]:,}',
        f'  model state / GPU        {r["state_gb"]:.1f} GB',
        f'  activations kept         {r["kept_gb"]:.2f} GB '
        f'({r["kept_per_sample_gb"]:.2f} GB/sample)',
        f'  backward transient       {r["transient_gb"]:.2f} GB',
        f'  loss maps                {r["loss_gb"]:.2f} GB',
        f'  reserve                  {r["reserve_gb"]:.1f} GB',
        f'  no checkpointing/sample  {r["no_cp_per_sample_gb"]:.2f} GB '
        f'({parts} GB)',
        f'  peak at batch {s.batch:<4d}       {r["peak_gb"]:.1f} GB of '
        f'{r["gpu_memory"]:g} GB; largest batch that fits: '
        f'{r["max_batch"]}',
        f'fits {s.gpus} x {r["gpu_memory"]:g} GB at batch {s.batch} per '
        f'GPU: {answer}',
    ])


#: (GPUs, GB per GPU) of the table's "fits" columns
TABLE_HARDWARE = ((8, 80.0), (1, 80.0), (1, 24.0))


def table_row(path: str, cfg) -> str:
    """One markdown row of the fits table for the config at ``path``."""
    gpus = gpus_in_name(path) or DEFAULT_GPUS
    named = estimate(cfg, gpus, 80.0)
    fits = [estimate(cfg, n, memory, recording=named['recording'])['fits']
            for n, memory in TABLE_HARDWARE]
    s = named['setup']
    run = {'single': 'one GPU', 'ddp': 'DDP', 'zero3': 'ZeRO-3',
           'fsdp': 'FSDP'}[s.strategy]
    precision = 'bf16' if s.compute_dtype == torch.bfloat16 else (
        'fp16' if s.compute_dtype == torch.float16 else 'fp32')
    cp = ' + ckpt' if s.checkpointing else ''
    cells = [f'`{path}`', f'{run} {precision}{cp}', str(s.batch),
             f'{named["peak_gb"]:.1f} ({gpus} GPUs)'] + [
                 'yes' if f else 'no' for f in fits]
    return '| ' + ' | '.join(cells) + ' |'


TABLE_HEADER = ('| config | run | batch / GPU | peak / GPU, GB (GPUs of its '
                'name, 80 GB) | 8 x 80 GB | 1 x 80 GB | 1 x 24 GB |\n'
                '|---|---|---|---|---|---|---|')


def main(argv=None) -> Dict:
    """Print the estimates (or the table); exit 1 when a training does not
    fit. Returns the estimate of each config by path."""
    args = parse_args(argv)
    for path in args.config:
        if not osp.isfile(path):
            sys.exit(f'error: config file not found: {path!r}')
    for flag, value in (('--gpus', args.gpus), ('--batch', args.batch)):
        if value is not None and value < 1:
            sys.exit(f'error: {flag} must be >= 1, got {value}')
    if args.gpu_memory <= 0:
        sys.exit(f'error: --gpu-memory must be > 0, got {args.gpu_memory}')
    from mmengine.config import Config

    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    if args.table:
        print(TABLE_HEADER)
        for path in args.config:
            print(table_row(path, Config.fromfile(path)), flush=True)
        return {}
    results = {}
    for path in args.config:
        gpus = args.gpus or gpus_in_name(path) or DEFAULT_GPUS
        try:
            results[path] = estimate(Config.fromfile(path), gpus,
                                     args.gpu_memory, args.reserve,
                                     args.batch, args.shape)
        except ValueError as err:
            sys.exit(f'error: {path}: {err}')
        print(report(osp.basename(path), results[path]), flush=True)
    if not all(r['fits'] for r in results.values()):
        sys.exit(1)
    return results


if __name__ == '__main__':
    main()
