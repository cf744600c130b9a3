"""Train a sapiens2_mm config with mmengine's Runner.

Usage::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [auto|PATH]] [--amp]
        [--load-partial] [--ignore-lock] [--cfg-options key=value ...]
        [--launcher none|pytorch|slurm]

Distributed: ``tools/dist_train.sh CONFIG GPUS`` (torchrun) or
``tools/slurm_train.sh PARTITION JOB CONFIG`` (srun). A config with a
``strategy`` (FSDP/DeepSpeed, see configs/_base_/strategies/) runs on
mmengine's FlexibleRunner. What this script changes in the config is listed
in :func:`sapiens2_mm.apis.train_config.prepare_train_config`.
"""
import argparse
import os
import os.path as osp
import re
import shlex
import sys
from typing import Dict, List, Optional

from sapiens2_mm.apis.run_args import parse_run_args

INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for Ctrl-C
TERMINATED_EXIT_CODE = 143  # 128 + SIGTERM (scancel, time limit, pre-emption)
TOOLS = osp.dirname(osp.abspath(__file__))
# options of a launched process that its launcher script adds itself
_LAUNCHER_OPTIONS = ('--launcher', '--local-rank', '--local_rank')


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
    from sapiens2_mm.apis.train_config import prepare_train_config
    from sapiens2_mm.utils.config_file import load_config
    cfg = load_config(args.config, args.cfg_options, notes)
    return prepare_train_config(
        cfg, work_dir=args.work_dir, launcher=args.launcher,
        resume=args.resume, amp=args.amp, load_partial=args.load_partial,
        notes=notes)


def _script(name: str) -> str:
    """tools/<name> as the user's shell reaches it from here."""
    return osp.relpath(osp.join(TOOLS, name))


def _per_node(env: Dict[str, str]) -> str:
    """Tasks per node of a Slurm job ('8' of '8(x2)')."""
    value = env.get('SLURM_NTASKS_PER_NODE') or env.get(
        'SLURM_TASKS_PER_NODE') or env.get('LOCAL_WORLD_SIZE', '8')
    found = re.match(r'\d+', value)
    return found.group(0) if found else '8'


def resume_command(argv: List[str], work_dir: str, launcher: str = 'none',
                   env: Optional[Dict[str, str]] = None) -> str:
    """The command line that resumes this run: the same arguments, the
    resolved work dir and ``--resume`` (auto), in the form that started it:
    ``python tools/train.py`` alone, ``tools/dist_train.sh CONFIG GPUS`` for
    ``--launcher pytorch`` (with NNODES / NODE_RANK / MASTER_ADDR / PORT on
    several nodes) or ``tools/slurm_train.sh PARTITION JOB CONFIG`` for
    ``--launcher slurm`` (GPUS / GPUS_PER_NODE from the job).

    Args:
        argv: this process's arguments (tools/train.py's).
        work_dir: the run's work dir.
        launcher: ``--launcher`` of this run.
        env: the environment to read the launch from (default: os.environ).
    """
    env = os.environ if env is None else env
    rest, skip = [], 0
    for i, token in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if token in ('--work-dir', '--resume') + _LAUNCHER_OPTIONS:
            follows = argv[i + 1] if i + 1 < len(argv) else ''
            if token != '--resume' or (follows and not follows.startswith(
                    '-') and (follows == 'auto' or follows.endswith('.pth')
                              or osp.isdir(follows))):
                skip = 1
            continue
        if token.startswith(tuple(f'{t}=' for t in (
                '--work-dir', '--resume') + _LAUNCHER_OPTIONS)):
            continue
        rest.append(token)
    tail = ['--work-dir', work_dir, '--resume']
    if launcher == 'pytorch':
        nodes = int(env.get('GROUP_WORLD_SIZE', '1'))
        command = shlex.join([_script('dist_train.sh'), rest[0],
                              env.get('LOCAL_WORLD_SIZE', '1'), *rest[1:],
                              *tail])
        if nodes > 1:
            command = (f'NNODES={nodes} NODE_RANK=0 MASTER_ADDR='
                       f'{env.get("MASTER_ADDR", "HOST")} PORT='
                       f'{env.get("MASTER_PORT", "29500")} {command}  '
                       f'# on each node, NODE_RANK 0..{nodes - 1}')
        return command
    if launcher == 'slurm':
        return (f'GPUS={env.get("SLURM_NTASKS", "8")} GPUS_PER_NODE='
                f'{_per_node(env)} ' + shlex.join([
                    _script('slurm_train.sh'),
                    env.get('SLURM_JOB_PARTITION', 'PARTITION'),
                    env.get('SLURM_JOB_NAME', 'JOB'), *rest, *tail]))
    return shlex.join(['python', _script('train.py'), *rest, *tail])


def interrupted_message(work_dir: str, argv: List[str], at_iter,
                        launcher: str = 'none',
                        signal_name: Optional[str] = None) -> str:
    """Where the last complete checkpoint is and how to resume from it."""
    from sapiens2_mm.utils.work_dir import find_resume_checkpoint
    found, _ = find_resume_checkpoint(work_dir)
    where = f' at iteration {at_iter}' if at_iter is not None else ''
    what = ('Training stopped by SIGTERM' if signal_name == 'SIGTERM' else
            'Training interrupted')
    if found is None:
        return (f'{what}{where}. No complete checkpoint was saved in '
                f'{work_dir} yet; run the same command again to start over.')
    return (f'{what}{where}. Last complete checkpoint: {found}\nResume with:'
            f'\n  {resume_command(argv, work_dir, launcher)}')


def main(argv: Optional[List[str]] = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from sapiens2_mm.engine.runners import (
        InterruptFlag,
        build_runner,
        cleanup_distributed,
        global_rank,
        prepare_cpu_distributed,
        wait_for_all_ranks,
    )
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cli_errors import (
        unknown_types_as_config_errors,
        user_errors_as_exit,
    )
    from sapiens2_mm.utils.train_lock import WorkDirLock
    register_all_modules(init_default_scope=False)
    notes: List[str] = []
    with user_errors_as_exit():
        cfg = build_cfg(args, notes)
    lock = WorkDirLock(cfg.work_dir)
    if global_rank() == 0:
        with user_errors_as_exit():
            note = lock.acquire(force=args.ignore_lock)
        if note:
            notes.append(note)
    prepare_cpu_distributed(cfg)
    runner = None
    interrupt = InterruptFlag()
    try:
        with interrupt, user_errors_as_exit(), \
                unknown_types_as_config_errors(args.config):
            runner = build_runner(cfg)
            for note in notes:
                runner.logger.warning(note)
            runner.train()
        wait_for_all_ranks()
    except (KeyboardInterrupt, SyntaxError) as err:
        if isinstance(err, SyntaxError) and not interrupt.seen:
            raise
        at_iter = getattr(getattr(runner, '_train_loop', None), 'iter', None)
        if global_rank() == 0:
            print('\n' + interrupted_message(
                cfg.work_dir, argv, at_iter, args.launcher, interrupt.signal),
                file=sys.stderr)
        sys.exit(TERMINATED_EXIT_CODE if interrupt.signal == 'SIGTERM'
                 else INTERRUPTED_EXIT_CODE)
    finally:
        lock.release()
        cleanup_distributed()
    return runner


if __name__ == '__main__':
    main()
    from sapiens2_mm.engine.runners import exit_launched_process
    exit_launched_process()  # works around a torch teardown defect
