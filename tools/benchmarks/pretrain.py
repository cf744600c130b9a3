"""Benchmark a pretraining step: time and peak memory vs mask ratio and checkpointing.

For each (mask ratio, activation checkpointing) pair, one fresh process builds
``Sapiens2Pretrainer`` (2 global crops, no local crops, a 2-block 256-wide
decoder, 4096 prototypes) and reports the best of ``--iters`` timings of:

* ``encoder``: the student backbone's masked forward + backward on the global
  crops (what masking saves);
* ``step``: the whole ``loss()`` (teacher forward, EMA, decoder, heads) +
  backward + AdamW step.

Peak memory is ``torch.cuda.max_memory_allocated`` on a GPU, else the
process's peak resident set size (includes the interpreter, ~0.4 GB).

Example:
    python tools/benchmarks/pretrain.py --arch sapiens2_0.1b \
        --input-size 512 384 --threads 2
"""
import argparse
import json
import resource
import subprocess
import sys
import timeit

TINY = dict(embed_dims=32, num_layers=2, num_heads=4, feedforward_channels=64,
            num_tokenizer_layers=1)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--arch', default='sapiens2_0.1b',
                        help="a zoo arch or 'tiny'")
    parser.add_argument('--input-size', type=int, nargs=2, default=[512, 384],
                        metavar=('H', 'W'))
    parser.add_argument('--batch-size', type=int, default=1)
    parser.add_argument('--mask-ratios', type=float, nargs='+',
                        default=[0.0, 0.5, 0.75])
    parser.add_argument('--iters', type=int, default=3)
    parser.add_argument('--threads', type=int, default=None)
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def best_seconds(fn, iters):
    """Minimum wall time of ``fn`` over ``iters`` runs after one warm-up."""
    fn()
    return min(timeit.repeat(fn, number=1, repeat=iters))


def run_one(args, mask_ratio, with_cp):
    import torch

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    arch = TINY if args.arch == 'tiny' else args.arch
    model = MODELS.build(_cfg(args, arch, mask_ratio, with_cp))
    model = model.to(device).train()
    model.init_weights()
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=1e-4)
    h, w = args.input_size
    views = [torch.randn(args.batch_size, 3, h, w, device=device)
             for _ in range(2)]
    both = torch.cat(views)

    def encoder():
        if mask_ratio > 0:
            ids = model.backbone.random_mask(both, mask_ratio).ids_keep
            out = model.backbone(both, ids_keep=ids)[0]
        else:
            out = model.backbone(both)[0]
        out.float().pow(2).mean().backward()
        optim.zero_grad(set_to_none=True)

    def step():
        losses = model.loss(views)
        sum(v for k, v in losses.items() if 'loss' in k).backward()
        optim.step()
        optim.zero_grad(set_to_none=True)

    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats()
    enc = best_seconds(encoder, args.iters)
    full = best_seconds(step, args.iters)
    if device.type == 'cuda':
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(mask_ratio=mask_ratio, with_cp=with_cp, encoder_s=enc,
                step_s=full, peak_mib=peak)


def _cfg(args, arch, mask_ratio, with_cp):
    from sapiens2_mm.models.backbones.arch_zoo import resolve_arch
    width = resolve_arch(arch)['embed_dims']
    return dict(
        type='Sapiens2Pretrainer',
        backbone=dict(type='Sapiens2', arch=arch,
                      img_size=tuple(args.input_size), with_cp=with_cp),
        neck=dict(type='RectMAEDecoder', in_channels=width,
                  decoder_embed_dims=256, depth=2, num_heads=8),
        head=dict(type='RectMAEHead'),
        dino_head=dict(type='DINOHead', in_channels=width,
                       hidden_channels=1024, bottleneck_channels=256,
                       num_prototypes=4096),
        dino_loss=dict(type='DINOClsLoss', out_dim=4096),
        mask_ratio=mask_ratio, koleo_loss_weight=0.0)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        ratio, cp = args.worker.split(',')
        print(json.dumps(run_one(args, float(ratio), cp == '1')))
        return
    argv = list(sys.argv[1:] if argv is None else argv)
    h, w = args.input_size
    print(f'{args.arch} {h}x{w}, batch {args.batch_size} x 2 global crops, '
          f'{args.device}, best of {args.iters}')
    print(f'{"mask":>5} {"ckpt":>5} {"encoder s":>10} {"step s":>8} '
          f'{"peak MiB":>9}', flush=True)
    rows = []
    for with_cp in (False, True):
        for ratio in args.mask_ratios:
            out = subprocess.run(
                [sys.executable, __file__, *argv, '--worker',
                 f'{ratio},{int(with_cp)}'],
                capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f'{row["mask_ratio"]:>5.2f} {str(row["with_cp"]):>5} '
                  f'{row["encoder_s"]:>10.3f} {row["step_s"]:>8.3f} '
                  f'{row["peak_mib"]:>9.0f}', flush=True)
    for with_cp in (False, True):
        base = [r for r in rows if r['with_cp'] == with_cp
                and r['mask_ratio'] == 0.0]
        high = [r for r in rows if r['with_cp'] == with_cp
                and r['mask_ratio'] == 0.75]
        if base and high:
            print(f'with_cp={with_cp}: encoder time at 0.75 / 0 = '
                  f'{high[0]["encoder_s"] / base[0]["encoder_s"]:.2f}, step '
                  f'{high[0]["step_s"] / base[0]["step_s"]:.2f}')


if __name__ == '__main__':
    main()
