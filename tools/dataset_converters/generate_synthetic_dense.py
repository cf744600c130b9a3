"""Write procedural scenes with exact normals, depth, camera and albedo.

The folder layouts are the ones ``NormalDataset``, ``PointmapDataset`` and
``AlbedoDataset`` read; one output folder serves all three tasks (they share
``rgb/`` and ``mask/``). Existing files are never overwritten.

Example (the bundled sample in tests/data/dense_sample):

    python tools/dataset_converters/generate_synthetic_dense.py \
        tests/data/dense_sample --num-scenes 4 --seed 0 --normal-format .npz

Scene i is drawn from numpy's ``SeedSequence(seed, spawn_key=(i,))``: sets
written with different ``--seed`` values share no scene (train with
``--seed 0``, validate with ``--seed 1``).
"""
import argparse
import time

from synthetic_dense import (  # the module beside this script
    NORMAL_CONVENTIONS,
    TASK_FOLDERS,
    generate_dataset,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out_dir', help='output folder (new or empty)')
    parser.add_argument('--num-scenes', type=int, default=4)
    parser.add_argument('--height', type=int, default=256)
    parser.add_argument('--width', type=int, default=192)
    parser.add_argument('--seed', type=int, default=0,
                        help='>= 0; scene i is drawn from '
                        'SeedSequence(seed, spawn_key=(i,)), so sets of '
                        'different seeds never share a scene')
    parser.add_argument('--tasks', nargs='+', default=sorted(TASK_FOLDERS),
                        choices=sorted(TASK_FOLDERS))
    parser.add_argument('--normal-convention', default='opencv',
                        choices=sorted(NORMAL_CONVENTIONS),
                        help='opencv: x right, y down, z forward, normals '
                        'toward the camera; opencv_away: the same axes, '
                        'normals away from the camera; opengl: x right, y up, '
                        'z toward the viewer')
    parser.add_argument('--image-format', default='.png',
                        choices=['.png', '.jpg'])
    parser.add_argument('--normal-format', default='.npy',
                        choices=['.npy', '.npz'])
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f'--seed must be >= 0 (numpy SeedSequence), got '
                     f'{args.seed}')
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    names = generate_dataset(
        args.out_dir, args.num_scenes, args.height, args.width, args.seed,
        args.tasks, args.normal_convention, args.image_format,
        args.normal_format)
    print(f'Wrote {len(names)} scenes ({args.height}x{args.width}, tasks '
          f'{" ".join(args.tasks)}, normals {args.normal_convention}) to '
          f'{args.out_dir} in {time.perf_counter() - start:.2f} s.')


if __name__ == '__main__':
    main()
