"""Seg post-processing speed: resize the logits to the photo and argmax,
every pixel interpolated (dense) against the boundary-only look-up of
:func:`sapiens2_mm.codecs.label_resize.resize_argmax`.

    python tools/benchmarks/label_resize.py \\
        [--sizes 1024x768:1920x1440 1024x768:4032x3024] [--classes 29]

Two kinds of (C, h, w) logits, both synthetic (no trained weights here):

* ``smooth``: random class scores on a coarse grid (1/64 of the network
  size) upsampled bicubically, plus a little noise: large regions with one
  winner, as a trained segmenter's output is;
* ``noise``: i.i.d. normal scores, as a randomly initialized model gives
  (every cell is a boundary; the dense path is taken).

Both ways run alternately ``--repeat`` times; the best time of each is
printed with their ratio and the number of pixels whose labels differ
(float rounding at exact ties only).
"""
import argparse
import os.path as osp
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, osp.join(osp.dirname(osp.abspath(__file__)), '..', '..'))

from sapiens2_mm.codecs.label_resize import resize_argmax  # noqa: E402
from sapiens2_mm.codecs.uniform_cells import (  # noqa: E402
    source_labels,
    uniform_cells,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', nargs='+',
                        default=['1024x768:1920x1440', '1024x768:4032x3024',
                                 '128x96:480x640'],
                        help='network HxW:photo HxW pairs')
    parser.add_argument('--classes', type=int, default=29)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--threads', type=int, help='torch threads')
    return parser.parse_args(argv)


def _pair(text: str):
    try:
        net, photo = text.split(':')
        return (tuple(int(v) for v in net.split('x')),
                tuple(int(v) for v in photo.split('x')))
    except ValueError:
        raise SystemExit(f'--sizes entry {text!r}: expected NETHxNETW:'
                         'PHOTOHxPHOTOW, e.g. 1024x768:4032x3024') from None


def synthetic_logits(kind: str, classes: int, size) -> torch.Tensor:
    """(classes, h, w) ``smooth`` or ``noise`` logits (see the docstring)."""
    h, w = size
    if kind == 'noise':
        return torch.randn(classes, h, w)
    coarse = torch.randn(1, classes, max(2, h // 64), max(2, w // 64)) * 4
    smooth = F.interpolate(coarse, size=size, mode='bicubic')[0]
    return smooth + 0.02 * torch.randn(classes, h, w)


def boundary_fraction(logits: torch.Tensor) -> float:
    """Fraction of source cells whose corners disagree (or nearly tie)."""
    labels, decided = source_labels(logits, None)
    return 1 - uniform_cells(labels, decided).float().mean().item()


def main(argv=None) -> list:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    print(f'{args.classes} classes, torch threads {torch.get_num_threads()}'
          f', best of {args.repeat}')
    for text in args.sizes:
        net, photo = _pair(text)
        for kind in ('smooth', 'noise'):
            logits = synthetic_logits(kind, args.classes, net)
            best = dict(dense=float('inf'), boundary=float('inf'))
            labels = {}
            for _ in range(args.repeat):
                for way, sparse_max in (('dense', 0.0), ('boundary', None)):
                    kwargs = {} if sparse_max is None else dict(
                        sparse_max=sparse_max)
                    start = time.perf_counter()
                    labels[way] = resize_argmax(logits, photo, **kwargs)
                    best[way] = min(best[way], time.perf_counter() - start)
            differ = int((labels['dense'] != labels['boundary']).sum())
            row = dict(net=net, photo=photo, kind=kind,
                       boundary=boundary_fraction(logits),
                       dense_ms=1e3 * best['dense'],
                       new_ms=1e3 * best['boundary'], differ=differ)
            rows.append(row)
            print(f'{net[0]}x{net[1]} -> {photo[0]}x{photo[1]} {kind:6s} '
                  f'boundary cells {100 * row["boundary"]:5.1f}%  dense '
                  f'{row["dense_ms"]:8.1f} ms  resize_argmax '
                  f'{row["new_ms"]:8.1f} ms  ({row["dense_ms"] / row["new_ms"]:.1f}x)'
                  f'  labels differing: {differ}')
    return rows


if __name__ == '__main__':
    main()
