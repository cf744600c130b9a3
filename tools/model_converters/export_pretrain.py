"""Export the teacher (or student) backbone of a pretraining checkpoint.

Writes an official-layout ``sapiens2_*_pretrain.safetensors`` (bare backbone
keys, float32, ``rope_embed.periods`` bfloat16) and, with ``--pth``, a
``.pth`` holding ``{"teacher": {"backbone.*": ...}}``. Both load with
``init_cfg=dict(type='Pretrained', checkpoint=PATH)`` into ``Sapiens2``.

Example:
    python tools/model_converters/export_pretrain.py \
        work_dirs/pretrain_1b/iter_500000.pth sapiens2_1b_pretrain.safetensors \
        --pth sapiens2_1b_pretrain_teacher.pth
"""
import argparse

import sapiens2_mm  # noqa: F401  (allow-lists mmengine checkpoint classes)
from sapiens2_mm.utils.cli_errors import user_errors_as_exit
from sapiens2_mm.utils.pretrain_export import export_pretrain


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('src', help='mmengine checkpoint of Sapiens2Pretrainer')
    parser.add_argument('dst', help='output .safetensors')
    parser.add_argument('--which', choices=('teacher', 'student'),
                        default='teacher')
    parser.add_argument('--pth', help='also write a {"teacher": ...} .pth')
    parser.add_argument('--overwrite', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with user_errors_as_exit():
        state = export_pretrain(args.src, args.dst, args.which, args.pth,
                                args.overwrite)
    print(f'Exported the {args.which} backbone ({len(state)} tensors) of '
          f'{args.src} -> {args.dst}' + (f' and {args.pth}' if args.pth else ''))


if __name__ == '__main__':
    main()
