"""Train a sapiens2_mm config with mmengine's Runner.

Usage::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [auto|PATH]] [--amp]
        [--load-partial] [--ignore-lock] [--cfg-options key=value ...]
        [--launcher none|pytorch|slurm]

Distributed: ``tools/dist_train.sh CONFIG GPUS`` (torchrun) or
``tools/slurm_train.sh PARTITION JOB CONFIG`` (srun). A config with a
``strategy`` (FSDP/DeepSpeed, see configs/_base_/strategies/) runs on
mmengine's FlexibleRunner.
"""
import argparse
import os
import os.path as osp
import shlex
import signal
import sys
from typing import List, Optional

from mmengine.config import Config, DictAction

AMP_DTYPE = 'bfloat16'  # bf16: fp16 overflows in ViT heads
INTERRUPTED_EXIT_CODE = 130  # 128 + SIGINT, what shells report for Ctrl-C
CHECKPOINT_HOOKS = ('CheckpointHook', 'mmengine.CheckpointHook')


class ToolError(RuntimeError):
    """A user error the tools report as one clear message."""


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
        help=f'mixed precision training ({AMP_DTYPE} autocast)')
    parser.add_argument(
        '--load-partial', action='store_true',
        help='load_from may fit the model only partly: load the keys whose '
        'names and shapes match and log the rest (default: refuse any '
        'mismatch). Same as load_partial = True in the config')
    parser.add_argument(
        '--ignore-lock', action='store_true',
        help='train even if the work dir is locked by another training '
        '(only when that run is known to be gone)')
    return parse_with_common_args(parser, argv)


def parse_with_common_args(parser: argparse.ArgumentParser,
                           argv: Optional[List[str]]) -> argparse.Namespace:
    """Add --cfg-options / --launcher / --local-rank (shared with test.py),
    parse, and export LOCAL_RANK for launchers that only pass the flag."""
    parser.add_argument(
        '--cfg-options', nargs='+', action=DictAction,
        help='override config keys, e.g. train_dataloader.batch_size=4; keys '
        'the config does not have are refused')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none', help='job launcher')
    # torchrun < 2.0 passes --local-rank / --local_rank
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def load_config(path: str, cfg_options: Optional[dict],
                notes: Optional[List[str]] = None) -> Config:
    """Read ``path``, refuse unknown ``cfg_options`` keys, merge them.

    Overrides of config variables reach the copies the runner reads
    (``train_pipeline.2.prob`` also changes ``train_dataloader.dataset.
    pipeline``), and a new ``train_cfg.max_iters`` moves the scheduler ends
    bound to the old one; each such change is appended to ``notes``.
    """
    from sapiens2_mm.utils.cfg_options import apply_cfg_options
    if not osp.isfile(path):
        raise ToolError(
            f'Config file not found: {path!r}. Pass a path such as '
            'configs/pose/<name>.py (see docs/train_test.md).')
    cfg = Config.fromfile(path)
    changes = apply_cfg_options(cfg, cfg_options)
    if notes is not None:
        notes.extend(changes)
    return cfg


def ensure_writable_dir(path: str, what: str = 'work dir') -> str:
    """Create ``path`` if needed and prove it is writable; return it."""
    from sapiens2_mm.utils.output_paths import OutputPathError, check_writable_dir
    try:
        return check_writable_dir(path, what)
    except OutputPathError as err:
        raise ToolError(
            f'{err} Use --work-dir (or --show-dir/--out).') from err


def resolve_work_dir(cfg: Config, work_dir: Optional[str],
                     config_path: str) -> None:
    """CLI > config > ./work_dirs/<config name>, checked writable."""
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(config_path))[0])
    ensure_writable_dir(cfg.work_dir)


def enable_amp(cfg: Config) -> None:
    """Wrap the optimizer in mmengine's AmpOptimWrapper with bf16 autocast."""
    from mmengine.device import get_device
    if get_device() == 'cpu':
        raise ToolError(
            '--amp needs an accelerator (mmengine AmpOptimWrapper supports '
            'CUDA/NPU/MLU/MUSA); none was found. Drop --amp to train in fp32.')
    wrapper = cfg.optim_wrapper
    if wrapper.get('type') in ('DeepSpeedOptimWrapper', ):
        raise ToolError(
            '--amp does not apply to a DeepSpeed config: set bf16 in the '
            'strategy (configs/_base_/strategies/deepspeed_zero3_bf16.py).')
    if wrapper.get('type') == 'AmpOptimWrapper':
        wrapper.setdefault('dtype', AMP_DTYPE)
        return
    wrapper.type = 'AmpOptimWrapper'
    wrapper.dtype = AMP_DTYPE
    if is_fsdp(cfg):
        wrapper.use_fsdp = True  # sharded gradient scaler
    # bf16 keeps fp32's exponent range: no loss scaling needed
    wrapper.loss_scale = 1.0


def set_resume(cfg: Config, resume: Optional[str],
               notes: Optional[List[str]] = None) -> None:
    """``auto``: newest complete checkpoint of the work dir; a path: that file.

    ``auto`` resolves ``last_checkpoint`` relative to the work dir (moved or
    copied work dirs), falls back past unreadable (truncated) checkpoints to
    the newest complete one, and with none found trains from the start (and
    from the config's ``load_from``, if any); ``notes`` says which happened.
    """
    from sapiens2_mm.utils.work_dir import (
        checkpoint_problem,
        find_resume_checkpoint,
    )
    if resume is None:
        return
    notes = notes if notes is not None else []
    if resume == 'auto':
        found, skipped = find_resume_checkpoint(cfg.work_dir)
        if found is None and skipped:
            # checkpoints exist but none reads: starting over would silently
            # throw the run away; that must be the user's explicit choice
            raise ToolError(
                f'--resume: no checkpoint of {cfg.work_dir} can be read:\n  ' +
                '\n  '.join(skipped) + '\nMove them away (or use another '
                '--work-dir) to start over, or --resume PATH a good copy.')
        for line in skipped:
            notes.append(f'--resume: {line}')
        if found is None:
            cfg.resume = False
            notes.append(
                f'--resume: no checkpoint found in {cfg.work_dir} (no '
                'readable last_checkpoint target or iter_N.pth/epoch_N.pth); '
                'training starts from the beginning' +
                (f' with load_from={cfg.load_from}.' if cfg.get('load_from')
                 else '.'))
            return
        if skipped:
            notes.append(f'--resume: falling back to the newest complete '
                         f'checkpoint {found}.')
        else:
            notes.append(f'--resume: resuming from {found}.')
        check_checkpoint_task(cfg, found)
        cfg.resume = True
        cfg.load_from = found
        return
    if osp.isdir(resume):
        raise ToolError(
            f'--resume {resume!r} is a folder (per-rank shards of an FSDP '
            "state_dict_cfg='local' run?); resume takes a checkpoint file "
            "saved with state_dict_cfg='full'.")
    if not osp.isfile(resume):
        raise ToolError(
            f'--resume checkpoint not found: {resume!r}. Use --resume auto to '
            'continue from the latest checkpoint of the work dir.')
    problem = checkpoint_problem(resume)
    if problem is not None:
        raise ToolError(
            f'--resume checkpoint {resume!r} cannot be read ({problem}); it '
            'may be truncated. Use --resume auto to take the newest complete '
            'checkpoint of the work dir.')
    check_checkpoint_task(cfg, resume)
    cfg.resume = True
    cfg.load_from = resume


def check_checkpoint_task(cfg: Config, checkpoint: str) -> None:
    """Refuse to resume a checkpoint trained for another task.

    The task of each side is read from its config (the checkpoint's is in
    ``meta.cfg``); without this, the optimizer groups of the other model
    fail to load with a traceback that names neither task.
    """
    import torch
    from mmengine.config import Config as MMConfig

    from sapiens2_mm.apis.tasks.base import config_task
    from sapiens2_mm.utils.safe_torch_load import (
        allow_mmengine_checkpoint_globals,
    )
    allow_mmengine_checkpoint_globals()
    try:
        meta = torch.load(checkpoint, map_location='cpu', mmap=True,
                          weights_only=True).get('meta') or {}
        saved = MMConfig.fromstring(meta['cfg'], file_format='.py')
        theirs, ours = config_task(saved), config_task(cfg)
    except Exception:  # noqa: BLE001 - no task recorded: nothing to compare
        return
    if theirs != ours:
        raise ToolError(
            f'--resume {checkpoint}: checkpoint of task {theirs}, config of '
            f'task {ours}. Resume with the config the checkpoint was trained '
            'with, or fine-tune from it with load_from (--load-partial).')


def route_load_from(cfg: Config, partial: bool,
                    notes: Optional[List[str]] = None) -> None:
    """Load a fine-tuning ``load_from`` through CheckedCheckpointLoadHook.

    mmengine would load it non-strictly without mapping official key names
    (an official pose ``.safetensors`` would drop the whole head); the hook
    reads .safetensors and .pth, maps official keys as tools/test.py does and
    refuses any mismatch before the first iteration, unless ``partial``.
    """
    partial = bool(partial or cfg.get('load_partial', False))
    source = cfg.get('load_from')
    if cfg.get('resume') or not source:
        return
    if not osp.isfile(source):
        raise ToolError(
            f'load_from checkpoint not found: {source!r}. Fix the path in '
            'the config (or --cfg-options load_from=PATH).')
    if is_fsdp(cfg):
        # Sapiens2FSDPStrategy loads it the same way into the plain model,
        # after init_weights and before wrapping
        cfg.load_from = None
        cfg.strategy.load_before_wrap = dict(checkpoint=source,
                                             allow_partial=partial)
        return
    if cfg.get('strategy') is not None:
        if notes is not None:
            notes.append(
                f'load_from={source} is loaded by the {cfg.strategy.type} '
                '(mmengine, not strict).')
        return
    cfg.load_from = None
    hooks = [h for h in (cfg.get('custom_hooks') or [])
             if 'CheckedCheckpointLoadHook' not in str(h.get('type'))]
    hooks.append(dict(type='CheckedCheckpointLoadHook', checkpoint=source,
                      load_at='before_train', allow_partial=partial))
    cfg.custom_hooks = hooks


def use_atomic_checkpoints(cfg: Config,
                           notes: Optional[List[str]] = None) -> None:
    """Swap mmengine's CheckpointHook for AtomicCheckpointHook (same
    arguments; saves that fail half-way keep the previous checkpoint)."""
    hook = (cfg.get('default_hooks') or {}).get('checkpoint')
    if isinstance(hook, dict) and hook.get('type') in CHECKPOINT_HOOKS:
        hook['type'] = 'AtomicCheckpointHook'
        if notes is not None:
            notes.append('default_hooks.checkpoint: CheckpointHook replaced '
                         'by AtomicCheckpointHook (atomic saves).')


def add_rng_state_hook(cfg: Config) -> None:
    """Checkpoint RNG states so a resumed run continues the same stream."""
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(h.get('type') in ('RNGStateHook', 'sapiens2_mm.RNGStateHook')
               for h in hooks):
        hooks.append(dict(type='RNGStateHook'))
    cfg.custom_hooks = hooks


def prepare_cpu_distributed(cfg: Config) -> None:
    """Let ``--launcher pytorch`` run on CPU-only machines (gloo).

    mmengine's ``init_dist`` calls ``torch.cuda.set_device`` unconditionally
    and wraps DDP with ``device_ids=[LOCAL_RANK]``; both fail without a GPU.
    Here the process group is initialized first (the Runner then skips its own
    init) and DDP gets ``device_ids=None``, as torch requires for CPU modules.
    """
    import torch.distributed as torch_dist
    from mmengine.device import get_device
    if cfg.launcher != 'pytorch' or get_device() != 'cpu':
        return
    dist_cfg = cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})
    if dist_cfg.get('backend', 'nccl') != 'gloo':
        print(f'No GPU: using the gloo backend instead of '
              f'{dist_cfg.get("backend", "nccl")!r}.', file=sys.stderr)
        dist_cfg['backend'] = 'gloo'
    if not torch_dist.is_initialized():
        torch_dist.init_process_group(**dist_cfg)
    wrapper = cfg.get('model_wrapper_cfg') or dict(
        type='MMDistributedDataParallel')
    wrapper.setdefault('device_ids', None)
    cfg.model_wrapper_cfg = wrapper


def check_strategy(cfg: Config) -> None:
    """Refuse FSDP/DeepSpeed set-ups that cannot run here, with the reason."""
    import importlib.util
    strategy = cfg.get('strategy')
    if not strategy:
        return
    kind = str(strategy.get('type', ''))
    if kind in ('FSDPStrategy', 'mmengine.FSDPStrategy'):
        raise ToolError(
            f"strategy.type={kind!r}: use 'Sapiens2FSDPStrategy' (mmengine's "
            'FSDPStrategy with its weight-decay, clipping, resume and testing '
            'defects fixed; see configs/_base_/strategies/fsdp_bf16.py).')
    if 'FSDP' in kind and cfg.launcher == 'none':
        raise ToolError(
            'FSDPStrategy needs a distributed launch (a process group), even '
            'on one device: use tools/dist_train.sh CONFIG 1.')
    if 'DeepSpeed' in kind:
        if importlib.util.find_spec('deepspeed') is None:
            raise ToolError(
                'The config uses DeepSpeedStrategy but deepspeed is not '
                'installed: pip install deepspeed (it builds CUDA ops; see '
                'docs/large_models.md), or use the FSDP strategy instead.')
        wrapper = str(cfg.get('optim_wrapper', {}).get('type', 'OptimWrapper'))
        if 'DeepSpeed' not in wrapper:
            raise ToolError(
                f'DeepSpeedStrategy needs optim_wrapper.type='
                f"'DeepSpeedOptimWrapper', got {wrapper!r}.")


def is_fsdp(cfg: Config) -> bool:
    """Whether ``cfg`` trains with an FSDP strategy."""
    return 'FSDP' in str((cfg.get('strategy') or {}).get('type', ''))


def wait_for_all_ranks() -> None:
    """Barrier after a finished run, so that no rank tears its connections
    down while another is still in a collective (gloo aborts then)."""
    import torch.distributed as torch_dist
    if torch_dist.is_available() and torch_dist.is_initialized():
        torch_dist.barrier()


def cleanup_distributed() -> None:
    """Destroy the process group before exit.

    mmengine leaves it alive; with gloo the process can then abort at
    interpreter shutdown ("terminate called without an active exception").
    """
    import torch.distributed as torch_dist
    if torch_dist.is_available() and torch_dist.is_initialized():
        torch_dist.destroy_process_group()


def build_cfg(args: argparse.Namespace,
              notes: Optional[List[str]] = None) -> Config:
    """The training config after every command-line option is applied.

    Args:
        args: parsed command line.
        notes: if given, receives what was changed or decided on the way
            (propagated overrides, the checkpoint resumed from), for the log.
    """
    notes = notes if notes is not None else []
    cfg = load_config(args.config, args.cfg_options, notes)
    cfg.launcher = args.launcher
    resolve_work_dir(cfg, args.work_dir, args.config)
    if args.amp:
        enable_amp(cfg)
    set_resume(cfg, args.resume, notes)
    route_load_from(cfg, getattr(args, 'load_partial', False), notes)
    use_atomic_checkpoints(cfg, notes)
    add_rng_state_hook(cfg)
    check_strategy(cfg)
    return cfg


def build_runner(cfg: Config):
    """Runner, FlexibleRunner (configs with a ``strategy``) or ``runner_type``.

    The two mmengine runners are sapiens2_mm's subclasses that keep the config
    dump and the environment report in the log file, off the console, and
    drop named upstream notices (sapiens2_mm/engine/runners).
    """
    from mmengine.registry import RUNNERS

    from sapiens2_mm.engine.runners import (
        Sapiens2FlexibleRunner,
        Sapiens2Runner,
    )
    quiet = {'Runner': Sapiens2Runner,
             'FlexibleRunner': Sapiens2FlexibleRunner}
    if cfg.get('runner_type') in quiet:  # the strategy snippets name these
        return quiet[cfg.runner_type].from_cfg(cfg)
    if 'runner_type' in cfg:
        return RUNNERS.build(cfg)
    if cfg.get('strategy') is not None:
        return Sapiens2FlexibleRunner.from_cfg(cfg)
    return Sapiens2Runner.from_cfg(cfg)


def global_rank() -> int:
    """This process's rank from the launcher's environment (0 if none)."""
    for name in ('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'):
        if os.environ.get(name, '').isdigit():
            return int(os.environ[name])
    return 0


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


def interrupted_message(cfg: Config, argv: List[str], at_iter) -> str:
    """Where the last complete checkpoint is and how to resume from it."""
    from sapiens2_mm.utils.work_dir import find_resume_checkpoint
    found, _ = find_resume_checkpoint(cfg.work_dir)
    where = f' at iteration {at_iter}' if at_iter is not None else ''
    if found is None:
        return (f'Training interrupted{where}. No complete checkpoint was '
                f'saved in {cfg.work_dir} yet; run the same command again to '
                'start over.')
    return (f'Training interrupted{where}. Last complete checkpoint: {found}'
            f'\nResume with:\n  {resume_command(argv, cfg.work_dir)}')


class _InterruptFlag:
    """Records that SIGINT arrived, then raises KeyboardInterrupt as usual.

    mmengine formats the config with yapf under a bare ``except:`` while it
    saves a checkpoint, so a Ctrl-C that lands there surfaces as a
    ``SyntaxError('Failed to format the config file')``; the flag tells the
    two apart.
    """

    def __init__(self):
        self.seen = False
        self._previous = None

    def __enter__(self):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False

    def _handle(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt


def main(argv: Optional[List[str]] = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
    from sapiens2_mm.utils.checkpoint import CheckpointMismatchError
    from sapiens2_mm.utils.train_lock import WorkDirLock, WorkDirLockedError
    register_all_modules(init_default_scope=False)
    notes: List[str] = []
    try:
        cfg = build_cfg(args, notes)
    except (ToolError, UnknownConfigKeyError) as err:
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
    interrupt = _InterruptFlag()
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
        print('\n' + interrupted_message(cfg, argv, at_iter),
              file=sys.stderr)
        sys.exit(INTERRUPTED_EXIT_CODE)
    except (CheckpointMismatchError, ToolError) as err:
        sys.exit(f'error: {err}')
    except ValueError as err:
        if 'Could not read checkpoint' in str(err):
            sys.exit(f'error: {err}')
        raise
    finally:
        lock.release()
        cleanup_distributed()
    return runner


if __name__ == '__main__':
    main()
