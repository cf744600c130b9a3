"""Benchmark batched DARK-UDP decoding against mmpose's UDPHeatmap.decode.

Builds realistic 308-keypoint heatmaps (UDP Gaussians with random peak heights
and noise; a fraction of keypoints absent, i.e. noise only) for a batch of
persons, decodes them with mmpose's per-person ``UDPHeatmap.decode`` and with
``Sapiens2UDPHeatmap.batch_decode`` in the same run, checks that the results
agree and prints timings.

Usage::

    python tools/benchmarks/pose_decode.py [--persons 8]
        [--keypoints 308] [--heatmap 192 256] [--absent 0.1] [--repeats 3]
"""
import argparse
import time

import numpy as np
import torch
from mmpose.codecs import UDPHeatmap

from sapiens2_mm.codecs import Sapiens2UDPHeatmap


def make_heatmaps(codec, persons, keypoints, absent, seed=0):
    rng = np.random.default_rng(seed)
    w, h = codec.input_size
    out = []
    for _ in range(persons):
        kps = rng.uniform([0, 0], [w - 1, h - 1],
                          size=(1, keypoints, 2)).astype(np.float32)
        vis = (rng.uniform(size=(1, keypoints)) >= absent).astype(np.float32)
        hm = codec.encode(kps, vis)['heatmaps']
        hm *= rng.uniform(0.3, 1.0, size=(keypoints, 1, 1)).astype(np.float32)
        hm += rng.normal(0, 0.01, size=hm.shape).astype(np.float32)
        out.append(hm)
    return np.stack(out)


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--persons', type=int, default=8)
    parser.add_argument('--keypoints', type=int, default=308)
    parser.add_argument('--heatmap', type=int, nargs=2, default=(192, 256),
                        metavar=('W', 'H'))
    parser.add_argument('--absent', type=float, default=0.1,
                        help='fraction of keypoints with noise-only heatmaps')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    hm_w, hm_h = args.heatmap
    input_size = (hm_w * 4, hm_h * 4)
    ours = Sapiens2UDPHeatmap(input_size, (hm_w, hm_h), sigma=6,
                              blur_kernel_size=11)
    ref = UDPHeatmap(input_size, (hm_w, hm_h), sigma=6, blur_kernel_size=11)
    batch = make_heatmaps(ours, args.persons, args.keypoints, args.absent)
    tensor = torch.from_numpy(batch)
    print(f'{args.persons} persons x {args.keypoints} keypoints, heatmaps '
          f'{hm_w}x{hm_h} (input {input_size[0]}x{input_size[1]}), '
          f'{args.absent:.0%} absent, torch threads {torch.get_num_threads()}')

    t_ref, ref_out = best_of(lambda: [ref.decode(h.copy()) for h in batch],
                             args.repeats)
    t_ours, ours_out = best_of(lambda: ours.batch_decode(tensor), args.repeats)
    ref_kps = np.concatenate([k for k, _ in ref_out])
    ref_scores = np.concatenate([s for _, s in ref_out])
    kps = np.concatenate(ours_out[0])
    scores = np.concatenate(ours_out[1])
    diff = np.abs(kps - ref_kps).max(-1)
    confident = ref_scores > 0.1
    print(f'mmpose UDPHeatmap.decode : {t_ref / args.persons * 1e3:8.2f} ms '
          'per person')
    print(f'Sapiens2 batch_decode    : {t_ours / args.persons * 1e3:8.2f} ms '
          f'per person  ({t_ref / t_ours:.1f}x faster)')
    print(f'max |dx| on keypoints with score > 0.1: '
          f'{diff[confident].max():.2e} px ({confident.sum()} keypoints)')
    print(f'max |dx| on all keypoints (incl. noise-only peaks): '
          f'{diff.max():.2e} px; scores equal: '
          f'{np.array_equal(scores, ref_scores)}')


if __name__ == '__main__':
    main()
