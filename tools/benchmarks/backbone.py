"""Benchmark the Sapiens2 backbone forward: ms/image, GFLOP/s and % of GEMM peak.

The GEMM peak is measured in the same run (the best of a square matmul and the
model's own FFN matmul, in fp32 and in bf16), so the fractions are comparable
across machines. FLOPs are counted by
``torch.utils.flop_counter`` (2 x multiply-adds of matmuls, convs and attention).

Example:
    python tools/benchmarks/backbone.py --arch sapiens2_0.1b \
        --input-size 512 384 --threads 2
"""
import argparse
import timeit

import torch
from torch.utils.flop_counter import FlopCounterMode

from sapiens2_mm.models.backbones import Sapiens2


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--arch', default='sapiens2_0.1b')
    parser.add_argument('--input-size', type=int, nargs=2, default=[512, 384],
                        metavar=('H', 'W'))
    parser.add_argument('--batch-size', type=int, default=1)
    parser.add_argument('--use-tokenizer', action='store_true')
    parser.add_argument('--iters', type=int, default=5)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--threads', type=int, default=None,
                        help='torch threads (default: torch default)')
    parser.add_argument('--gemm-size', type=int, default=2048)
    parser.add_argument('--dtypes', nargs='+', default=['fp32', 'bf16'],
                        choices=['fp32', 'bf16'])
    return parser.parse_args(argv)


def best_seconds(fn, iters, warmup):
    """Minimum wall time of ``fn`` over ``iters`` runs after ``warmup``."""
    for _ in range(warmup):
        fn()
    return min(timeit.repeat(fn, number=1, repeat=iters))


def gemm_peak_gflops(dtype, size, iters):
    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    seconds = best_seconds(lambda: torch.mm(a, b), iters, 2)
    return 2 * size**3 / seconds / 1e9


def shape_gemm_gflops(dtype, tokens, channels, iters):
    """Throughput of the model's own FFN GEMM: (tokens x C) @ (C x 8C)."""
    x = torch.randn(tokens, channels, dtype=dtype)
    w = torch.randn(8 * channels, channels, dtype=dtype)
    seconds = best_seconds(lambda: torch.nn.functional.linear(x, w), iters, 2)
    return 2 * tokens * channels * 8 * channels / seconds / 1e9


def count_flops(model, x):
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(x)
    return counter.get_total_flops()


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Sapiens2(arch=args.arch, use_tokenizer=args.use_tokenizer,
                     out_type='featmap').eval()
    model.init_weights()
    x = torch.randn(args.batch_size, 3, *args.input_size)
    flops = count_flops(model, x)
    print(f'arch {args.arch}  input {args.batch_size}x3x{args.input_size[0]}x'
          f'{args.input_size[1]}  threads {torch.get_num_threads()}  '
          f'GFLOPs/forward {flops / 1e9:.1f}')
    outputs = {}
    for name in args.dtypes:
        dtype = torch.float32 if name == 'fp32' else torch.bfloat16
        tokens = args.batch_size * (model.num_extra_tokens + (
            args.input_size[0] // model.stride) * (args.input_size[1] //
                                                   model.stride))
        # The peak is the best of a large square GEMM and the model's own FFN
        # GEMM, each the fastest of 2 x iters runs, so that a noisy run lowers
        # rather than inflates the reported fractions.
        square = gemm_peak_gflops(dtype, args.gemm_size, 2 * args.iters)
        shaped = shape_gemm_gflops(dtype, tokens, model.embed_dims,
                                   2 * args.iters)
        peak = max(square, shaped)

        def forward(name=name):
            with torch.no_grad(), torch.autocast(
                    'cpu', dtype=torch.bfloat16, enabled=name == 'bf16'):
                outputs[name] = model(x)[0].float()

        seconds = best_seconds(forward, args.iters, args.warmup)
        achieved = flops / seconds / 1e9
        print(f'{name}: {seconds * 1e3 / args.batch_size:8.1f} ms/image  '
              f'{achieved:7.1f} GFLOP/s  GEMM peak {peak:7.1f} GFLOP/s  '
              f'= {100 * achieved / peak:5.1f}% of peak  (square '
              f'{args.gemm_size}^3: {square:6.1f}, FFN shape {tokens}x'
              f'{model.embed_dims}x{8 * model.embed_dims}: {shaped:6.1f})')
    if 'fp32' in outputs and 'bf16' in outputs:
        ref, low = outputs['fp32'], outputs['bf16']
        rel = ((low - ref).norm() / ref.norm()).item()
        print(f'bf16 vs fp32 output: relative L2 error {rel:.2e}, '
              f'max abs {(low - ref).abs().max().item():.3e} '
              f'(feature RMS {ref.pow(2).mean().sqrt().item():.3f})')


if __name__ == '__main__':
    main()
