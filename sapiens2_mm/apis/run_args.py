"""The command line ``tools/train.py`` and ``tools/test.py`` share."""
import argparse
import os
from typing import List, Optional

from ..utils.cfg_options import CfgOptionsAction


def parse_run_args(parser: argparse.ArgumentParser,
                   argv: Optional[List[str]] = None) -> argparse.Namespace:
    """Add the options train.py and test.py share (``--cfg-options``,
    ``--launcher``, ``--local-rank``), parse ``argv`` and export
    ``LOCAL_RANK`` for launchers that only pass the flag."""
    parser.add_argument(
        '--cfg-options', nargs='+', action=CfgOptionsAction,
        help='override config keys, e.g. train_dataloader.batch_size=4; keys '
        'the config does not have are refused, and so are config variables '
        '(set the keys that hold their value; see docs/train_test.md)')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none', help='job launcher')
    # torchrun < 2.0 passes --local-rank / --local_rank
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault('LOCAL_RANK', str(args.local_rank))
    return args
