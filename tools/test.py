"""Evaluate a checkpoint with mmengine's Runner.

Usage::

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.pkl]
        [--show-dir DIR] [--tta] [--compile] [--dtype fp32|bf16]
        [--cfg-options key=value ...]
        [--launcher none|pytorch|slurm]

CHECKPOINT may be an official Sapiens2 task ``.safetensors`` file or a ``.pth``
saved by tools/train.py. Either is loaded strictly: a checkpoint of another
task or model size fails with the list of mismatching keys. The metrics are
printed and written to ``<work dir>/test_metrics.json``; ``--out`` must be a
new file, and a dump that fails is reported (exit 1) after the metrics are
written. What this script
changes in the config is listed in
:func:`sapiens2_mm.apis.test_config.prepare_test_config`.
"""
import argparse
import json
import os.path as osp
import sys
from typing import List, Optional, Tuple

from sapiens2_mm.apis.run_args import parse_run_args

METRICS_FILE = 'test_metrics.json'
INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for Ctrl-C


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Test (and evaluate) a sapiens2_mm model')
    parser.add_argument('config', help='config file path')
    parser.add_argument(
        'checkpoint', help='checkpoint: official .safetensors or a .pth')
    parser.add_argument(
        '--work-dir', help='where logs and metrics go (default: '
        './work_dirs/<config name>)')
    parser.add_argument(
        '--out', help='dump the raw predictions to this .pkl file')
    parser.add_argument(
        '--show-dir', help='write visualizations of the predictions here')
    parser.add_argument(
        '--tta', action='store_true',
        help='test-time augmentation: wrap the model in the config\'s '
        'tta_model and use its tta_pipeline (seg flip test); pose flip test '
        'is model.test_cfg.flip_test')
    parser.add_argument(
        '--compile', action='store_true',
        help='torch.compile the network (eager with a warning where no '
        'compiler is available)')
    parser.add_argument(
        '--dtype', choices=('fp32', 'bf16'), default='fp32',
        help='network precision (bf16: autocast; an error on devices '
        'without bf16)')
    return parse_run_args(parser, argv)


def build_cfg(args: argparse.Namespace):
    """The test config after every command-line option is applied; the
    drawing folder of ``--show-dir`` is kept as ``args.show_images_dir``."""
    from sapiens2_mm.apis.test_config import prepare_test_config
    from sapiens2_mm.utils.config_file import load_config
    cfg = load_config(args.config, args.cfg_options)
    notes: List[str] = []
    args.show_images_dir = prepare_test_config(
        cfg, args.checkpoint, work_dir=args.work_dir, launcher=args.launcher,
        out=args.out, show_dir=args.show_dir, tta=args.tta,
        compiled=args.compile, dtype=args.dtype, notes=notes)
    for note in notes:
        print(f'note: {note}', file=sys.stderr)
    return cfg


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    from mmengine.dist import is_main_process

    from sapiens2_mm.engine.runners import (
        build_runner,
        cleanup_distributed,
        prepare_cpu_distributed,
        wait_for_all_ranks,
    )
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cli_errors import (
        unknown_types_as_config_errors,
        user_errors_as_exit,
    )
    register_all_modules(init_default_scope=False)
    with user_errors_as_exit():
        cfg = build_cfg(args)
    prepare_cpu_distributed(cfg)
    try:
        with user_errors_as_exit(), \
                unknown_types_as_config_errors(args.config):
            runner = build_runner(cfg)
            metrics = runner.test()
        dump_errors = failed_dumps(runner)
        wait_for_all_ranks()
        main_process = is_main_process()  # before the group is destroyed
    except KeyboardInterrupt:
        # Ctrl-C: a test keeps no partial results, so there is nothing to
        # save; say so instead of a traceback, exit as shells expect
        print(f'\nTest interrupted before its metrics were computed; '
              f'nothing was written to {osp.join(cfg.work_dir, METRICS_FILE)}'
              '. Run the same command again to test.', file=sys.stderr)
        sys.exit(INTERRUPTED_EXIT_CODE)
    finally:
        cleanup_distributed()
    if main_process:
        plain = {k: (v.item() if hasattr(v, 'item') else v)
                 for k, v in metrics.items()}
        path = osp.join(cfg.work_dir, METRICS_FILE)
        with open(path, 'w') as f:
            json.dump(plain, f, indent=2)
        print(json.dumps(plain))
        print(f'Metrics written to {path}')
        if getattr(args, 'show_images_dir', None):
            print(f'Visualizations written to {args.show_images_dir}')
        if dump_errors:
            sys.exit('error: ' + '; '.join(
                f'the predictions could not be written to {out} ({why})'
                for out, why in dump_errors) + f'. The metrics were written '
                f'to {path}.')
    return metrics


def failed_dumps(runner) -> List[Tuple[str, str]]:
    """``(path, reason)`` of every ``--out`` dump that failed: the dump
    keeps its error (``AtomicDumpResults``) so the metrics are written
    first."""
    evaluator = getattr(runner.test_loop, 'evaluator', None)
    return [(m.out_file_path, m.error)
            for m in getattr(evaluator, 'metrics', [])
            if getattr(m, 'error', None)]


if __name__ == '__main__':
    main()
    from sapiens2_mm.engine.runners import exit_launched_process
    exit_launched_process()  # works around a torch teardown defect
