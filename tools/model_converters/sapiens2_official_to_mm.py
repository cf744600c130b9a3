"""Convert an official Sapiens2 checkpoint to an mmengine .pth of sapiens2_mm.

Example:
    python tools/model_converters/sapiens2_official_to_mm.py \
        sapiens2_1b_pose.safetensors checkpoints/sapiens2-1b_pose.pth
"""
import argparse

from sapiens2_mm.utils import official_tasks
from sapiens2_mm.utils.checkpoint_convert import official_to_mmengine
from sapiens2_mm.utils.cli_errors import user_errors_as_exit


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('src', help='official .safetensors or .pth')
    parser.add_argument('dst', help='output .pth')
    parser.add_argument('--task', choices=official_tasks(), help='default: detected')
    parser.add_argument('--overwrite', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with user_errors_as_exit():
        task = official_to_mmengine(args.src, args.dst, args.task,
                                    args.overwrite)
    print(f'Converted {task} checkpoint {args.src} -> {args.dst}')


if __name__ == '__main__':
    main()
