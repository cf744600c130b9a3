"""Compare FSDP1 (FullyShardedDataParallel), FSDP2 (fully_shard) and DDP.

Each variant runs in its own pair of processes (a 2-rank group: gloo on the
CPU, nccl on GPUs), trains the same Sapiens2 backbone (one unit per block,
AdamW, a squared-output loss) for ``--iters`` steps after one warm-up step and
reports, per rank:

* ``step_s``: the median step time (forward, backward, optimizer);
* ``state_mib``: bytes of this rank's parameters, gradients and AdamW state
  (what sharding divides);
* ``peak_mib``: ``torch.cuda.max_memory_allocated`` on a GPU, else the growth
  of the process's peak resident set over the run (includes allocator
  slack);
* ``max_param_diff``: the largest parameter difference to the DDP run after
  the last step (all variants start from one seeded init).

Ratios are to FSDP1 in the same run. Example (about 1 minute on 2 cores)::

    python tools/benchmarks/fsdp.py --out fsdp_bench.json
"""
import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

VARIANTS = ('fsdp1', 'fsdp2', 'ddp')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--embed-dims', type=int, default=192)
    parser.add_argument('--num-layers', type=int, default=6)
    parser.add_argument('--input-size', type=int, nargs=2, default=[128, 96],
                        metavar=('H', 'W'))
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--iters', type=int, default=5)
    parser.add_argument('--variants', nargs='+', default=list(VARIANTS),
                        choices=VARIANTS)
    parser.add_argument('--out', help='write the table as JSON here')
    return parser.parse_args(argv)


def build_backbone(args):
    """The seeded Sapiens2 backbone every variant starts from."""
    import torch

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(0)
    heads = max(1, args.embed_dims // 64)
    return MODELS.build(dict(
        type='Sapiens2', img_size=tuple(args.input_size), patch_size=16,
        arch=dict(embed_dims=args.embed_dims, num_layers=args.num_layers,
                  num_heads=heads, feedforward_channels=4 * args.embed_dims,
                  num_tokenizer_layers=1),
        out_type='featmap', init_cfg=None))


def wrap(model, variant, device):
    """``model`` wrapped as ``variant`` (one unit per Sapiens2Block)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from sapiens2_mm.models.layers import Sapiens2Block
    if variant == 'ddp':
        return DistributedDataParallel(
            model.to(device), device_ids=None if device.type == 'cpu' else [
                device.index])
    if variant == 'fsdp1':
        from torch.distributed.fsdp import FullyShardedDataParallel

        from sapiens2_mm.engine.hooks import sapiens2_block_wrap_policy
        return FullyShardedDataParallel(
            model, auto_wrap_policy=sapiens2_block_wrap_policy,
            use_orig_params=True, device_id=device)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh(device.type, (2, ))
    model.to(device)
    for module in model.modules():
        if isinstance(module, Sapiens2Block):
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)
    assert isinstance(model, torch.nn.Module)
    return model


def local_tensor(t):
    return t.to_local() if hasattr(t, 'to_local') else t


def state_bytes(model, optimizer):
    total = 0
    for p in model.parameters():
        total += local_tensor(p).numel() * p.element_size()
        if p.grad is not None:
            total += local_tensor(p.grad).numel() * p.grad.element_size()
    for state in optimizer.state.values():
        for value in state.values():
            if hasattr(value, 'numel') and value.dim() > 0:
                total += local_tensor(value).numel() * value.element_size()
    return total


def full_params(model, variant):
    """Full (unsharded) parameters on the CPU, by plain name."""
    from sapiens2_mm.engine.fsdp_shapes import plain_name
    if variant == 'fsdp1':
        from torch.distributed.fsdp import FullyShardedDataParallel
        with FullyShardedDataParallel.summon_full_params(model):
            return {plain_name(k): v.detach().cpu().clone()
                    for k, v in model.named_parameters()}
    out = {}
    for k, v in model.named_parameters():
        v = v.full_tensor() if hasattr(v, 'full_tensor') else v
        out[plain_name(k).replace('module.', '', 1)] = v.detach().cpu().clone()
    return out


def worker(rank, args, variant, out_dir):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    cuda = torch.cuda.is_available()
    device = torch.device('cuda', rank) if cuda else torch.device('cpu')
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group('nccl' if cuda else 'gloo', rank=rank,
                            world_size=2,
                            init_method=f'file://{out_dir}/init_{variant}')
    try:
        model = wrap(build_backbone(args), variant, device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(1 + rank)
        x = torch.randn(args.batch_size, 3, *args.input_size,
                        generator=gen).to(device)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        times = []
        for step in range(args.iters + 1):
            start = time.perf_counter()
            out = model(x)[0]
            out.float().pow(2).mean().backward()
            optimizer.step()
            if step == args.iters:  # keep the last gradients for state_mib
                state = state_bytes(model, optimizer)
            optimizer.zero_grad()
            if cuda:
                torch.cuda.synchronize()
            if step:
                times.append(time.perf_counter() - start)
        peak = (torch.cuda.max_memory_allocated() if cuda else
                (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) *
                1024)
        params = full_params(model, variant)
        if rank == 0:  # plain numbers and tensors: read back weights-only
            torch.save(dict(step_s=float(statistics.median(times)),
                            state_mib=float(state / 2**20),
                            peak_mib=float(peak / 2**20), params=params),
                       os.path.join(out_dir, f'{variant}.pt'))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run(args):
    import torch
    import torch.multiprocessing as mp
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants:
            mp.start_processes(worker, args=(args, variant, tmp), nprocs=2,
                               join=True, start_method='fork')
            table[variant] = torch.load(os.path.join(tmp, f'{variant}.pt'),
                                        weights_only=True)
    reference = table.get('ddp', {}).get('params')
    base = table.get('fsdp1')
    rows = {}
    for variant, result in table.items():
        row = {k: round(result[k], 4)
               for k in ('step_s', 'state_mib', 'peak_mib')}
        if reference is not None:
            row['max_param_diff'] = max(
                float((result['params'][k] - v).abs().max())
                for k, v in reference.items())
        if base is not None:
            for key in ('step_s', 'state_mib', 'peak_mib'):
                row[f'{key}_vs_fsdp1'] = round(result[key] / base[key], 3) \
                    if base[key] else None
        rows[variant] = row
    return rows


def main(argv=None):
    args = parse_args(argv)
    rows = run(args)
    keys = sorted({k for row in rows.values() for k in row})
    print('variant ' + ' '.join(keys))
    for variant, row in rows.items():
        print(variant, ' '.join(f'{row.get(k)}' for k in keys))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(dict(args=vars(args), results=rows), f, indent=2)
        print(f'written to {args.out}', file=sys.stderr)
    return rows


if __name__ == '__main__':
    main()
