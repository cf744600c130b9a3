"""Train a sapiens2_mm config with mmengine's Runner.

Usage::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [auto|PATH]] [--amp]
        [--load-partial] [--ignore-lock] [--cfg-options key=value ...]
        [--launcher none|pytorch|slurm]

Distributed: ``tools/dist_train.sh CONFIG GPUS`` (torchrun) or
``tools/slurm_train.sh PARTITION JOB CONFIG`` (srun). A config with a
``strategy`` (FSDP/DeepSpeed, see configs/_base_/strategies/) runs on
mmengine's FlexibleRunner. What this script changes in the config is listed
in :func:`sapiens2_mm.apis.run_config.prepare_train_config`.
"""
import argparse
import shlex
import sys
from typing import List, Optional

from sapiens2_mm.apis.run_config import parse_run_args

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for Ctrl-C


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Train a sapiens2_mm model')
    parser.add_argument('config', help='config file path')
    parser.add_argument(
        '--work-dir', help='where logs and checkpoints go (default: '
        './work_dirs/<config name>)')
    parser.add_argument(
        '--resume', nargs='?', const='auto', default=None, metavar='auto|PATH',
        help='resume the schedule: "auto" (or no value) takes the latest '
        'checkpoint of the work dir, PATH a given checkpoint')
    parser.add_argument(
        '--amp', action='store_true',
        help='mixed precision training (bfloat16 autocast)')
    parser.add_argument(
        '--load-partial', action='store_true',
        help='load_from may fit the model only partly: load the keys whose '
        'names and shapes match and log the rest (default: refuse any '
        'mismatch). Same as load_partial = True in the config')
    parser.add_argument(
        '--ignore-lock', action='store_true',
        help='train even if the work dir is locked by another training '
        '(only when that run is known to be gone)')
    return parse_run_args(parser, argv)


def build_cfg(args: argparse.Namespace, notes: Optional[List[str]] = None):
    """The training config after every command-line option is applied;
    ``notes`` receives what was changed or decided on the way."""
    from sapiens2_mm.apis.run_config import load_config, prepare_train_config
    cfg = load_config(args.config, args.cfg_options, notes)
    return prepare_train_config(
        cfg, work_dir=args.work_dir, launcher=args.launcher,
        resume=args.resume, amp=args.amp, load_partial=args.load_partial,
        notes=notes)


def resume_command(argv: List[str], work_dir: str) -> str:
    """The command line that resumes this run: the same arguments, the
    resolved work dir and ``--resume`` (auto)."""
    rest, skip = [], 0
    for i, token in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if token in ('--work-dir', '--resume'):
            follows = argv[i + 1] if i + 1 < len(argv) else ''
            if token == '--work-dir' or (follows and not follows.startswith(
                    '-') and (follows == 'auto' or follows.endswith('.pth'))):
                skip = 1
            continue
        if token.startswith(('--work-dir=', '--resume=')):
            continue
        rest.append(token)
    return shlex.join(['python', 'tools/train.py', *rest, '--work-dir',
                       work_dir, '--resume'])


def interrupted_message(work_dir: str, argv: List[str], at_iter) -> str:
    """Where the last complete checkpoint is and how to resume from it."""
    from sapiens2_mm.utils.work_dir import find_resume_checkpoint
    found, _ = find_resume_checkpoint(work_dir)
    where = f' at iteration {at_iter}' if at_iter is not None else ''
    if found is None:
        return (f'Training interrupted{where}. No complete checkpoint was '
                f'saved in {work_dir} yet; run the same command again to '
                'start over.')
    return (f'Training interrupted{where}. Last complete checkpoint: {found}'
            f'\nResume with:\n  {resume_command(argv, work_dir)}')


def main(argv: Optional[List[str]] = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from sapiens2_mm.apis.run_config import RunConfigError
    from sapiens2_mm.engine.runners import (
        InterruptFlag,
        build_runner,
        cleanup_distributed,
        global_rank,
        prepare_cpu_distributed,
        wait_for_all_ranks,
    )
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
    from sapiens2_mm.utils.checkpoint import CheckpointMismatchError
    from sapiens2_mm.utils.cli_errors import unknown_type_message
    from sapiens2_mm.utils.train_lock import WorkDirLock, WorkDirLockedError
    register_all_modules(init_default_scope=False)
    notes: List[str] = []
    try:
        cfg = build_cfg(args, notes)
    except (RunConfigError, UnknownConfigKeyError) as err:
        sys.exit(f'error: {err}')
    lock = WorkDirLock(cfg.work_dir)
    if global_rank() == 0:
        try:
            note = lock.acquire(force=args.ignore_lock)
        except WorkDirLockedError as err:
            sys.exit(f'error: {err}')
        if note:
            notes.append(note)
    prepare_cpu_distributed(cfg)
    runner = None
    interrupt = InterruptFlag()
    try:
        with interrupt:
            runner = build_runner(cfg)
            for note in notes:
                runner.logger.warning(note)
            runner.train()
        wait_for_all_ranks()
    except (KeyboardInterrupt, SyntaxError) as err:
        if isinstance(err, SyntaxError) and not interrupt.seen:
            raise
        at_iter = getattr(getattr(runner, '_train_loop', None), 'iter', None)
        print('\n' + interrupted_message(cfg.work_dir, argv, at_iter),
              file=sys.stderr)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except (CheckpointMismatchError, RunConfigError) as err:
        sys.exit(f'error: {err}')
    except ValueError as err:
        if 'Could not read checkpoint' in str(err):
            sys.exit(f'error: {err}')
        raise
    except KeyError as err:  # a misspelled type= in the config
        if unknown_type_message(err):
            sys.exit(f'error: {unknown_type_message(err)} ({args.config})')
        raise
    finally:
        lock.release()
        cleanup_distributed()
    return runner


if __name__ == '__main__':
    main()
    from sapiens2_mm.engine.runners import exit_launched_process
    exit_launched_process()  # works around a torch teardown defect
