"""Consolidate a sharded FSDP checkpoint (a folder of per-rank shards) into one file.

A run with ``strategy = dict(state_dict_cfg='sharded')`` saves each checkpoint
as a folder (``iter_N.pth/``) in which every rank wrote its own shards. This
reads the whole folder in one process (no GPUs, no process group) and writes

* ``OUT.pth``: an mmengine checkpoint as ``state_dict_cfg='full'`` writes it
  (weights, meta, message hub, schedulers; ``--with-optimizer`` adds the
  optimizer state), for tools/test.py, the inference API, ``load_from`` and
  the converters in this folder;
* ``OUT.safetensors``: the weights in the official Sapiens2 layout, as
  sapiens2_mm_to_official.py writes them.

Examples:
    python tools/model_converters/consolidate_sharded_checkpoint.py \
        work_dirs/my_pose_5b/iter_20000.pth sapiens2_5b_pose_iter_20000.pth
    python tools/model_converters/consolidate_sharded_checkpoint.py \
        work_dirs/my_pose_5b/iter_20000.pth sapiens2_5b_pose.safetensors
"""
import argparse

from sapiens2_mm.utils import official_tasks
from sapiens2_mm.utils.checkpoint_convert import consolidate_sharded
from sapiens2_mm.utils.cli_errors import user_errors_as_exit


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('src', help='sharded checkpoint folder (iter_N.pth/)')
    parser.add_argument('dst', help='output .pth (mmengine) or .safetensors '
                        '(official layout)')
    parser.add_argument('--with-optimizer', action='store_true',
                        help='keep the optimizer state (.pth only)')
    parser.add_argument('--task', choices=official_tasks(),
                        help='for .safetensors; default: detected')
    parser.add_argument('--overwrite', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with user_errors_as_exit():
        what = consolidate_sharded(args.src, args.dst, args.task,
                                   args.with_optimizer, args.overwrite)
    print(f'Consolidated {args.src} -> {args.dst} ({what})')


if __name__ == '__main__':
    main()
