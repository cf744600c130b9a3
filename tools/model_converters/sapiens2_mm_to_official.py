"""Convert a sapiens2_mm (mmengine) checkpoint to the official .safetensors layout.

Example:
    python tools/model_converters/sapiens2_mm_to_official.py \
        work_dirs/my_pose/iter_10000.pth sapiens2_1b_pose_finetuned.safetensors
"""
import argparse

from sapiens2_mm.utils import official_tasks
from sapiens2_mm.utils.checkpoint_convert import mmengine_to_official
from sapiens2_mm.utils.cli_errors import user_errors_as_exit


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('src', help='mmengine .pth checkpoint')
    parser.add_argument('dst', help='output .safetensors')
    parser.add_argument('--task', choices=official_tasks(), help='default: detected')
    parser.add_argument('--overwrite', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with user_errors_as_exit():
        task = mmengine_to_official(args.src, args.dst, args.task,
                                    args.overwrite)
    print(f'Converted {task} checkpoint {args.src} -> {args.dst}')


if __name__ == '__main__':
    main()
