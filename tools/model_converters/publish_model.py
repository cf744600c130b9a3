"""Strip optimizer/scheduler state from a checkpoint and add its sha256 to the name.

Example:
    python tools/model_converters/publish_model.py work_dirs/x/iter_20000.pth \
        sapiens2-1b_seg29.pth   # -> sapiens2-1b_seg29-1a2b3c4d.pth
"""
import argparse

from sapiens2_mm.utils.checkpoint_convert import publish_checkpoint
from sapiens2_mm.utils.cli_errors import user_errors_as_exit


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('src', help='training checkpoint (.pth)')
    parser.add_argument('dst', help='published file name (hash is appended)')
    args = parser.parse_args(argv)
    with user_errors_as_exit():
        final = publish_checkpoint(args.src, args.dst)
    print(f'Published {final}')


if __name__ == '__main__':
    main()
