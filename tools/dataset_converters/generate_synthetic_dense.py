"""Write procedural scenes with exact normals, depth, camera and albedo.

The folder layouts are the ones ``NormalDataset``, ``PointmapDataset`` and
``AlbedoDataset`` read; one output folder serves all three tasks (they share
``rgb/`` and ``mask/``). Existing files are never overwritten.

Example (the bundled sample in tests/data/dense_sample):

    python tools/dataset_converters/generate_synthetic_dense.py \
        tests/data/dense_sample --num-scenes 4 --height 128 --width 96 \
        --seed 0 --normal-format .npz
"""
import argparse
import time

from sapiens2_mm.datasets.dense.synthetic import (
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
                        help='scene i uses seed + i')
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
    return parser.parse_args(argv)


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
