"""Prepare a config for ``tools/train.py``: the training policy.

:func:`prepare_train_config` lists every rewrite in its docstring; each step
is also a public function (``set_resume``, ``route_load_from``, ...) so a
caller can apply one alone. User errors raise :class:`~sapiens2_mm.apis.
run_config.RunConfigError`.

This module lives in ``apis`` because it asks the task registry (which task a
config or a checkpoint trains).
"""
import importlib.util
import os.path as osp
from typing import List, Optional

import torch
from mmengine.config import Config
from mmengine.device import get_device

from ..engine.optimizers.amp_optim_wrapper import AMP_TYPES, use_sapiens2_amp
from ..utils.safe_torch_load import allow_mmengine_checkpoint_globals
from ..utils.sharded_checkpoint import read_extra_state
from ..utils.work_dir import checkpoint_problem, find_resume_checkpoint
from .run_config import (
    SCOPE,
    RunConfigError,
    check_classes,
    is_fsdp,
    refuse_sharded_folder,
    set_work_dir,
    with_load_hook,
)
from .tasks import find_task

AMP_DTYPE = 'bfloat16'  # bf16: fp16 overflows in ViT heads
CHECKPOINT_HOOKS = ('CheckpointHook', 'mmengine.CheckpointHook')
ATOMIC_CHECKPOINT_HOOK = SCOPE + 'AtomicCheckpointHook'
RNG_STATE_HOOK = SCOPE + 'RNGStateHook'


def enable_amp(cfg: Config) -> None:
    """Wrap the optimizer in mmengine's AmpOptimWrapper with bf16 autocast."""
    if get_device() == 'cpu':
        raise RunConfigError(
            '--amp needs an accelerator (mmengine AmpOptimWrapper supports '
            'CUDA/NPU/MLU/MUSA); none was found. Drop --amp to train in fp32.')
    wrapper = cfg.optim_wrapper
    if wrapper.get('type') in ('DeepSpeedOptimWrapper', ):
        raise RunConfigError(
            '--amp does not apply to a DeepSpeed config: set bf16 in the '
            'strategy (configs/_base_/strategies/deepspeed_zero3_bf16.py).')
    if wrapper.get('type') in AMP_TYPES:
        wrapper.setdefault('dtype', AMP_DTYPE)
        return
    wrapper.type = 'AmpOptimWrapper'
    wrapper.dtype = AMP_DTYPE


def set_mixed_precision(cfg: Config,
                        notes: Optional[List[str]] = None) -> None:
    """Loss scaling that fits the precision, whoever asked for it.

    A mixed-precision optimizer wrapper (from ``--amp`` or the config)
    becomes ``Sapiens2AmpOptimWrapper``: no loss scaling for bf16,
    ``ShardedGradScaler`` for fp16 under FSDP (the inf check all-reduced, so
    every rank skips the same steps), ``GradScaler`` otherwise. Pointmap
    stays fp32, as the official recipe: bf16 (or fp16) autocast or FSDP
    low-precision parameters on a pointmap config are refused.
    """
    wrapper = cfg.get('optim_wrapper') or {}
    amp = use_sapiens2_amp(wrapper, is_fsdp(cfg))
    mixed = ((cfg.get('strategy') or {}).get('model_wrapper') or {}).get(
        'mixed_precision') or {}
    low = [f'{k}={mixed[k]}' for k in ('param_dtype', 'reduce_dtype')
           if mixed.get(k) not in (None, 'float32', 'fp32', torch.float32)]
    if amp:
        low.insert(0, f'autocast {wrapper.get("dtype") or "float16"}')
    if low and is_pointmap(cfg):
        raise RunConfigError(
            f'pointmap trains in fp32 (the official recipe; bf16 moves its '
            f'outputs by about 13 % relative), but this run uses '
            f'{", ".join(low)}. Drop --amp / AmpOptimWrapper and use '
            'configs/_base_/strategies/fsdp_fp32.py instead of fsdp_bf16.py.')
    if amp and notes is not None:
        notes.append(f'optim_wrapper: Sapiens2AmpOptimWrapper, '
                     f'{wrapper.get("dtype") or "float16"} autocast, ' + (
                         'no loss scaling' if str(wrapper.get('dtype')) in (
                             'bfloat16', 'torch.bfloat16') else
                         'ShardedGradScaler' if is_fsdp(cfg) else
                         'GradScaler') + '.')


def is_pointmap(cfg: Config) -> bool:
    """Whether ``cfg`` trains the pointmap task."""
    try:
        return find_task(cfg).name == 'pointmap'
    except ValueError:  # no task (pretraining, an unregistered model)
        return False


def check_checkpoint_task(cfg: Config, checkpoint: str) -> None:
    """Refuse to resume a checkpoint trained for another task.

    The task of each side is read from its config (the checkpoint's is in
    ``meta.cfg``); without this, the optimizer groups of the other model
    fail to load with a traceback that names neither task.
    """
    allow_mmengine_checkpoint_globals()
    try:
        meta = (read_extra_state(checkpoint) if osp.isdir(checkpoint) else
                torch.load(checkpoint, map_location='cpu', mmap=True,
                           weights_only=True)).get('meta') or {}
        saved = Config.fromstring(meta['cfg'], file_format='.py')
        theirs, ours = find_task(saved).name, find_task(cfg).name
    except Exception:  # noqa: BLE001 - no task recorded: nothing to compare
        return
    if theirs != ours:
        raise RunConfigError(
            f'--resume {checkpoint}: checkpoint of task {theirs}, config of '
            f'task {ours}. Resume with the config the checkpoint was trained '
            'with, or fine-tune from it with load_from (--load-partial).')


def set_resume(cfg: Config, resume: Optional[str],
               notes: Optional[List[str]] = None) -> None:
    """``auto``: newest complete checkpoint of the work dir; a path: that file.

    ``auto`` resolves ``last_checkpoint`` relative to the work dir (moved or
    copied work dirs), falls back past unreadable (truncated) checkpoints to
    the newest complete one, and with none found trains from the start (and
    from the config's ``load_from``, if any); ``notes`` says which happened.
    """
    if resume is None:
        return
    notes = notes if notes is not None else []
    if resume == 'auto':
        found, skipped = find_resume_checkpoint(cfg.work_dir)
        if found is None and skipped:
            # checkpoints exist but none reads: starting over would silently
            # throw the run away; that must be the user's explicit choice
            raise RunConfigError(
                f'--resume: no checkpoint of {cfg.work_dir} can be read:\n  ' +
                '\n  '.join(skipped) + '\nMove them away (or use another '
                '--work-dir) to start over, or --resume PATH a good copy.')
        notes.extend(f'--resume: {line}' for line in skipped)
        if found is None:
            cfg.resume = False
            notes.append(
                f'--resume: no checkpoint found in {cfg.work_dir} (no '
                'readable last_checkpoint target or iter_N.pth/epoch_N.pth); '
                'training starts from the beginning' +
                (f' with load_from={cfg.load_from}.' if cfg.get('load_from')
                 else '.'))
            return
        notes.append(f'--resume: falling back to the newest complete '
                     f'checkpoint {found}.' if skipped else
                     f'--resume: resuming from {found}.')
        resume = found
    elif not osp.exists(resume):
        raise RunConfigError(
            f'--resume checkpoint not found: {resume!r}. Use --resume auto to '
            'continue from the latest checkpoint of the work dir.')
    else:
        problem = checkpoint_problem(resume)
        if problem is not None and osp.isdir(resume):
            raise RunConfigError(
                f'--resume {resume!r} is a folder that cannot be read as a '
                f'sharded checkpoint ({problem}). Use --resume auto to take '
                'the newest complete checkpoint of the work dir.')
        if problem is not None:
            raise RunConfigError(
                f'--resume checkpoint {resume!r} cannot be read ({problem}); '
                'it may be truncated. Use --resume auto to take the newest '
                'complete checkpoint of the work dir.')
    if osp.isdir(resume) and not is_fsdp(cfg):
        raise RunConfigError(
            f'--resume {resume!r} is a sharded checkpoint (per-rank shards of '
            'an FSDP run); resume it with the FSDP config it was trained '
            'with, or consolidate it first: python tools/model_converters/'
            f'consolidate_sharded_checkpoint.py {resume} OUT.pth '
            '--with-optimizer')
    check_checkpoint_task(cfg, resume)
    cfg.resume = True
    cfg.load_from = resume


def route_load_from(cfg: Config, partial: bool = False,
                    notes: Optional[List[str]] = None) -> None:
    """Load a fine-tuning ``load_from`` through CheckedCheckpointLoadHook.

    mmengine would load it non-strictly without mapping official key names
    (an official pose ``.safetensors`` would drop the whole head); the hook
    reads .safetensors and .pth, maps official keys as tools/test.py does and
    refuses any mismatch before the first iteration, unless ``partial`` (or
    ``load_partial = True`` in the config).
    """
    partial = bool(partial or cfg.get('load_partial', False))
    source = cfg.get('load_from')
    if cfg.get('resume') or not source:
        return
    refuse_sharded_folder(source, 'load_from')
    if not osp.isfile(source):
        raise RunConfigError(
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
    with_load_hook(cfg, checkpoint=source, load_at='before_train',
                    allow_partial=partial)


def use_atomic_checkpoints(cfg: Config,
                           notes: Optional[List[str]] = None) -> None:
    """Swap mmengine's CheckpointHook for AtomicCheckpointHook (same
    arguments; saves that fail half-way keep the previous checkpoint)."""
    hook = (cfg.get('default_hooks') or {}).get('checkpoint')
    if isinstance(hook, dict) and hook.get('type') in CHECKPOINT_HOOKS:
        hook['type'] = ATOMIC_CHECKPOINT_HOOK
        if notes is not None:
            notes.append('default_hooks.checkpoint: CheckpointHook replaced '
                         'by AtomicCheckpointHook (atomic saves).')


def add_rng_state_hook(cfg: Config) -> None:
    """Checkpoint RNG states so a resumed run continues the same stream."""
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(h.get('type') in ('RNGStateHook', RNG_STATE_HOOK)
               for h in hooks):
        hooks.append(dict(type=RNG_STATE_HOOK))
    cfg.custom_hooks = hooks


def check_strategy(cfg: Config) -> None:
    """Refuse FSDP/DeepSpeed set-ups that cannot run here, with the reason."""
    strategy = cfg.get('strategy')
    if not strategy:
        return
    kind = str(strategy.get('type', ''))
    if kind in ('FSDPStrategy', 'mmengine.FSDPStrategy'):
        raise RunConfigError(
            f"strategy.type={kind!r}: use 'Sapiens2FSDPStrategy' (mmengine's "
            'FSDPStrategy with its weight-decay, clipping, resume and testing '
            'defects fixed; see configs/_base_/strategies/fsdp_bf16.py).')
    if is_fsdp(cfg) and cfg.get('launcher', 'none') == 'none':
        raise RunConfigError(
            'FSDPStrategy needs a distributed launch (a process group), even '
            'on one device: use tools/dist_train.sh CONFIG 1.')
    if 'DeepSpeed' in kind:
        if importlib.util.find_spec('deepspeed') is None:
            raise RunConfigError(
                'The config uses DeepSpeedStrategy but deepspeed is not '
                'installed: pip install deepspeed (it builds CUDA ops; see '
                'docs/large_models.md), or use the FSDP strategy instead.')
        wrapper = str(cfg.get('optim_wrapper', {}).get('type', 'OptimWrapper'))
        if 'DeepSpeed' not in wrapper:
            raise RunConfigError(
                f'DeepSpeedStrategy needs optim_wrapper.type='
                f"'DeepSpeedOptimWrapper', got {wrapper!r}.")


def prepare_train_config(cfg: Config, *, work_dir: Optional[str] = None,
                         launcher: str = 'none', resume: Optional[str] = None,
                         amp: bool = False, load_partial: bool = False,
                         notes: Optional[List[str]] = None) -> Config:
    """Make ``cfg`` ready for ``tools/train.py`` (changed in place).

    The rewrites, in order:

    1. ``launcher`` is set; ``work_dir`` is the argument, else the config's,
       else ``./work_dirs/<config name>``, created and checked writable.
    2. ``amp``: the optimizer wrapper becomes mmengine's ``AmpOptimWrapper``
       with bf16 autocast (:func:`enable_amp`); refused on CPU and DeepSpeed.
       Any mixed-precision wrapper (from ``amp`` or the config) then becomes
       ``Sapiens2AmpOptimWrapper``: no loss scaling for bf16, a sharded
       scaler for fp16 under FSDP; a pointmap config in bf16 is refused
       (:func:`set_mixed_precision`).
    3. ``resume`` (``'auto'`` or a path): ``resume`` / ``load_from`` point at
       the newest complete checkpoint, or that file, after checking it reads
       and trains the same task (:func:`set_resume`).
    4. A fine-tuning ``load_from`` is loaded strictly (official key names
       mapped) by ``CheckedCheckpointLoadHook`` before the first iteration,
       or by ``Sapiens2FSDPStrategy`` before wrapping; ``load_partial``
       allows a partial fit (:func:`route_load_from`).
    5. ``default_hooks.checkpoint`` becomes ``AtomicCheckpointHook``, so an
       interrupted save keeps the previous checkpoint.
    6. ``RNGStateHook`` is added, so a resumed run continues the random
       stream it left.
    7. FSDP / DeepSpeed set-ups that cannot run are refused
       (:func:`check_strategy`).
    8. A config whose head, losses, datasets, annotation loader and flip
       pairs disagree about the classes (or keypoints) is refused, naming
       each place (:func:`~.run_config.check_classes`).

    Args:
        cfg: a config from :func:`~sapiens2_mm.utils.config_file.load_config`.
        work_dir: where logs and checkpoints go.
        launcher: ``'none'``, ``'pytorch'``, ``'slurm'`` or ``'mpi'``.
        resume: None, ``'auto'`` or a checkpoint path.
        amp: bf16 mixed precision.
        load_partial: let ``load_from`` fit the model only partly.
        notes: receives what was decided on the way (the checkpoint resumed
            from, the hook swapped), for the run's log.

    Returns:
        ``cfg``.

    Raises:
        RunConfigError: with what to do instead.
    """
    notes = notes if notes is not None else []
    cfg.launcher = launcher
    set_work_dir(cfg, work_dir)
    if amp:
        enable_amp(cfg)
    set_mixed_precision(cfg, notes)
    set_resume(cfg, resume, notes)
    route_load_from(cfg, load_partial, notes)
    use_atomic_checkpoints(cfg, notes)
    add_rng_state_hook(cfg)
    check_strategy(cfg)
    check_classes(cfg)
    return cfg
