"""Prepare a config for a training or testing run: the policy of the tools.

``tools/train.py`` and ``tools/test.py`` parse their command line and call
:func:`prepare_train_config` / :func:`prepare_test_config`; tests and
notebooks call the same functions, so a run started from Python gets the same
config as one started from the shell.

>>> from sapiens2_mm.apis.run_config import load_config, prepare_train_config
>>> cfg = prepare_train_config(load_config('configs/seg/...py'), resume='auto')

Every rewrite of the config is listed in the two functions' docstrings. Each
step is also a public function (``set_resume``, ``route_load_from``, ...) so
a caller can apply one alone. User errors raise :class:`RunConfigError` with
what was wrong and what to do.

This module lives in ``apis`` because it asks the task registry (which task a
config or a checkpoint trains, which hook draws its predictions).
"""
import argparse
import importlib.util
import os
import os.path as osp
from typing import List, Mapping, Optional

import torch
from mmengine.config import Config
from mmengine.device import get_device

from ..engine.optimizers.amp_optim_wrapper import AMP_TYPES, use_sapiens2_amp
from ..runtime.precision import check_dtype
from ..utils.cfg_options import CfgOptionsAction, apply_cfg_options
from ..utils.output_paths import (
    OutputPathError,
    check_output_file,
    check_outside_folders,
    check_writable_dir,
)
from ..utils.safe_torch_load import allow_mmengine_checkpoint_globals
from ..utils.sharded_checkpoint import is_sharded_checkpoint, read_extra_state
from ..utils.work_dir import checkpoint_problem, find_resume_checkpoint
from .class_check import ClassMismatchError, check_config_classes
from .init_model import load_config as read_config
from .tasks import find_task

AMP_DTYPE = 'bfloat16'  # bf16: fp16 overflows in ViT heads
CHECKPOINT_HOOKS = ('CheckpointHook', 'mmengine.CheckpointHook')
# Everything inserted into a config names its scope: the tools run configs of
# any scope (a stock mmpose config has default_scope='mmpose', where an
# unprefixed 'AtomicCheckpointHook' is not found).
SCOPE = 'sapiens2_mm.'
LOAD_HOOK = SCOPE + 'CheckedCheckpointLoadHook'
ATOMIC_CHECKPOINT_HOOK = SCOPE + 'AtomicCheckpointHook'
RNG_STATE_HOOK = SCOPE + 'RNGStateHook'
SPEED_HOOK = SCOPE + 'InferenceSpeedHook'
DUMP_METRIC = SCOPE + 'AtomicDumpResults'


class RunConfigError(ValueError):
    """A config or option that cannot run, with what to do instead."""


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


def load_config(path: str, cfg_options: Optional[Mapping] = None,
                notes: Optional[List[str]] = None) -> Config:
    """Read ``path`` and merge ``cfg_options`` (``--cfg-options``).

    Unknown keys and overrides of config variables are refused
    (:func:`sapiens2_mm.utils.cfg_options.apply_cfg_options`); values changed
    beyond the named keys (a schedule following ``train_cfg.max_iters``) are
    appended to ``notes``.
    """
    try:
        cfg = read_config(path)
    except (FileNotFoundError, ValueError) as err:  # missing, not Python
        raise RunConfigError(str(err)) from err
    changes = apply_cfg_options(cfg, cfg_options)
    if notes is not None:
        notes.extend(changes)
    return cfg


def ensure_writable_dir(path: str, what: str = 'work dir') -> str:
    """Create ``path`` if needed and prove it is writable; return it."""
    try:
        return check_writable_dir(path, what, 'Use another --work-dir (or '
                                  '--show-dir / --out).')
    except OutputPathError as err:
        raise RunConfigError(str(err)) from err


def set_work_dir(cfg: Config, work_dir: Optional[str] = None) -> None:
    """``work_dir`` > the config's > ``./work_dirs/<config name>``, checked
    writable."""
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        name = osp.splitext(osp.basename(cfg.filename or 'config'))[0]
        cfg.work_dir = osp.join('./work_dirs', name)
    ensure_writable_dir(cfg.work_dir)


def is_fsdp(cfg: Config) -> bool:
    """Whether ``cfg`` runs with an FSDP strategy."""
    return 'FSDP' in str((cfg.get('strategy') or {}).get('type', ''))


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


def _with_load_hook(cfg: Config, **hook_args) -> None:
    """Replace any CheckedCheckpointLoadHook of ``cfg`` by one with
    ``hook_args``."""
    hooks = [h for h in (cfg.get('custom_hooks') or [])
             if 'CheckedCheckpointLoadHook' not in str(h.get('type'))]
    cfg.custom_hooks = hooks + [dict(type=LOAD_HOOK, **hook_args)]


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
    _with_load_hook(cfg, checkpoint=source, load_at='before_train',
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


def check_classes(cfg: Config) -> None:
    """Refuse a config whose places disagree about the classes or
    keypoints (:func:`~sapiens2_mm.apis.class_check.check_config_classes`):
    it would train or test with swapped or shifted labels."""
    try:
        check_config_classes(cfg)
    except ClassMismatchError as err:
        raise RunConfigError(str(err)) from err


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
       each place (:func:`check_classes`).

    Args:
        cfg: a config from :func:`load_config`.
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


FLEXIBLE_RUNNERS = ('FlexibleRunner', 'mmengine.FlexibleRunner')


def plain_runner_for_fsdp_test(cfg: Config,
                             notes: Optional[List[str]] = None) -> None:
    """Test an FSDP config started without a launcher in this process.

    FSDP needs a process group, so ``tools/test.py CONFIG CKPT`` on an FSDP
    config built the model and then died ("Default process group has not
    been initialized"). A test needs no sharding: the strategy (and the
    ``FlexibleRunner`` it asks for) is dropped, so the plain Runner tests the
    whole model, and :func:`set_checkpoint` loads the checkpoint through
    ``CheckedCheckpointLoadHook``, the same strict load
    ``Sapiens2FSDPStrategy`` does before wrapping. The strategy's bf16
    ``mixed_precision`` is not applied (fp32; ``--dtype bf16`` gives bf16
    autocast); ``notes`` says so and names ``tools/dist_test.sh`` for a
    sharded test.
    """
    if not is_fsdp(cfg) or cfg.get('launcher', 'none') != 'none':
        return
    cfg.pop('strategy')
    if cfg.get('runner_type') in FLEXIBLE_RUNNERS:
        cfg.pop('runner_type')
    if notes is not None:
        notes.append(
            'FSDP config without a launcher: tested in this process with the '
            'plain runner in fp32 (the strategy\'s mixed precision is not '
            'applied; --dtype bf16 gives bf16 autocast). For a sharded test '
            'use tools/dist_test.sh CONFIG CHECKPOINT GPUS.')


def set_checkpoint(cfg: Config, checkpoint: str) -> None:
    """Load ``checkpoint`` strictly through CheckedCheckpointLoadHook.

    mmengine's ``load_from`` would read only torch files and load them
    non-strictly; the hook reads .safetensors too and lists mismatching keys.
    """
    refuse_sharded_folder(checkpoint, 'the checkpoint')
    if not osp.isfile(checkpoint):
        raise RunConfigError(
            f'Checkpoint not found: {checkpoint!r}. Pass a .pth from '
            'tools/train.py or an official .safetensors file.')
    cfg.load_from = None
    cfg.resume = False
    if is_fsdp(cfg):
        # Sapiens2FSDPStrategy loads it (the same checks) into the plain
        # model before wrapping; FlexibleRunner's test would call
        # init_weights, which reads pretrain init_cfg files a tester does not
        # need and the plain Runner never calls for testing
        cfg.strategy.load_before_wrap = dict(checkpoint=checkpoint)
        cfg.init_weights_for_test_or_val = False
        return
    _with_load_hook(cfg, checkpoint=checkpoint)


def refuse_sharded_folder(path: str, what: str) -> None:
    """A sharded checkpoint folder is read only by ``--resume`` of its FSDP
    run; for testing, inference or fine-tuning it is consolidated first."""
    if is_sharded_checkpoint(path):
        raise RunConfigError(
            f'{what} {path!r} is a sharded checkpoint (a folder of per-rank '
            'shards); consolidate it into one file first: python tools/'
            f'model_converters/consolidate_sharded_checkpoint.py {path} '
            'OUT.pth')


def add_dump(cfg: Config, out: str) -> None:
    """Append the ``AtomicDumpResults`` metric writing predictions to ``out``
    (mmengine's DumpResults, written atomically, a failure kept instead of
    raised so the other metrics survive: :mod:`sapiens2_mm.evaluation.
    metrics.dump_results`).

    Raises:
        RunConfigError: ``out`` is not a ``.pkl``, is a folder, exists (never
            replaced) or cannot be written, before anything runs.
    """
    if not out.endswith(('.pkl', '.pickle')):
        raise RunConfigError(f'--out must be a .pkl file, got {out!r}')
    try:
        check_output_file(out, overwrite=False, what='--out file',
                          hint='Choose another --out path (or move that '
                          'file away).')
    except OutputPathError as err:
        raise RunConfigError(str(err)) from err
    evaluator = cfg.test_evaluator
    metrics = list(evaluator) if isinstance(evaluator, (list, tuple)) else [
        evaluator
    ]
    metrics.append(dict(type=DUMP_METRIC, out_file_path=out))
    cfg.test_evaluator = metrics


def dataset_input_folders(dataset: dict) -> List[str]:
    """The folders a dataset config reads: ``data_root``, every
    ``data_prefix`` folder and the folder of ``ann_file``, also inside
    wrappers (``dataset=`` / ``datasets=[...]``). Empty entries (the current
    folder by default) are left out."""
    folders: List[str] = []
    if not isinstance(dataset, dict):
        return folders
    root = dataset.get('data_root') or ''
    if root:
        folders.append(root)
    prefixes = dataset.get('data_prefix') or {}
    entries = list(prefixes.values()) if isinstance(prefixes, dict) else []
    ann_file = dataset.get('ann_file')
    if isinstance(ann_file, str) and ann_file:
        entries.append(osp.dirname(ann_file))
    for entry in entries:
        if isinstance(entry, str) and (entry or root):
            folders.append(osp.join(root, entry) if root else entry)
    inner = [dataset.get('dataset')] + list(dataset.get('datasets') or [])
    for sub in inner:
        folders += dataset_input_folders(sub)
    return folders


def check_show_folder(images_dir: str, inputs: List[str]) -> None:
    """Refuse a drawing folder that is (inside) an input folder or already
    holds files: a drawing never replaces a photo or an earlier drawing."""
    try:
        check_outside_folders(images_dir, inputs, '--show-dir folder')
    except OutputPathError as err:
        raise RunConfigError(str(err)) from err
    held = sorted(n for n in os.listdir(images_dir)
                  if not n.startswith('.')) if osp.isdir(images_dir) else []
    if held:
        raise RunConfigError(
            f'--show-dir: {images_dir!r} already holds {len(held)} file(s) '
            f'({", ".join(held[:3])}{", ..." if len(held) > 3 else ""}); '
            'drawings are never written over existing files. Pass a new or '
            'empty folder.')


def enable_show_dir(cfg: Config, show_dir: str) -> str:
    """Switch the task's visualization hook on, writing under ``show_dir``.

    The config's task (its registered description) knows its hook: pose uses
    mmpose's PoseVisualizationHook (``show_dir/<image>``), seg mmseg's
    SegVisualizationHook (``show_dir/vis_data/vis_image/<image>``). A config
    without a visualization hook gets the task's default one.

    The drawings keep the image names, so a folder inside the test data (or
    the image folder itself) or one holding files is refused before anything
    is written (:func:`check_show_folder`).

    Returns:
        The folder the images are written to.
    """
    inputs = dataset_input_folders(
        (cfg.get('test_dataloader') or {}).get('dataset') or {})
    check_show_folder(osp.abspath(show_dir), inputs)
    show_dir = osp.abspath(ensure_writable_dir(show_dir, '--show-dir'))
    try:
        images_dir = find_task(cfg).enable_show_dir(cfg, show_dir)
    except ValueError as err:
        raise RunConfigError(f'--show-dir: {err}') from err
    if images_dir != show_dir:
        check_show_folder(images_dir, inputs)
    return images_dir


def enable_tta(cfg: Config) -> None:
    """Wrap the model in ``tta_model`` and test with ``tta_pipeline`` (mmseg's
    ``--tta`` convention)."""
    missing = [k for k in ('tta_model', 'tta_pipeline') if not cfg.get(k)]
    if missing:
        raise RunConfigError(
            f'--tta needs {" and ".join(missing)} in {cfg.filename}; seg '
            'configs define them (SegFlipTTAModel), pose configs flip-test '
            'through model.test_cfg.flip_test=True instead.')
    cfg.test_dataloader.dataset.pipeline = cfg.tta_pipeline
    cfg.tta_model.module = cfg.model
    cfg.model = cfg.tta_model


def prepare_test_config(cfg: Config, checkpoint: str, *,
                        work_dir: Optional[str] = None,
                        launcher: str = 'none', out: Optional[str] = None,
                        show_dir: Optional[str] = None, tta: bool = False,
                        compiled: bool = False,
                        dtype: str = 'fp32',
                        notes: Optional[List[str]] = None) -> Optional[str]:
    """Make ``cfg`` ready for ``tools/test.py`` (changed in place).

    The rewrites, in order:

    1. ``launcher`` and the work dir as in :func:`prepare_train_config`; an
       FSDP config with ``launcher='none'`` drops its strategy and is tested
       in this process by the plain Runner (:func:`plain_runner_for_fsdp_test`).
    2. ``checkpoint`` is loaded strictly (official key names mapped) by
       ``CheckedCheckpointLoadHook``, or by ``Sapiens2FSDPStrategy`` before
       wrapping; ``load_from`` and ``resume`` are cleared
       (:func:`set_checkpoint`).
    3. ``out``: the ``AtomicDumpResults`` metric (mmengine's DumpResults,
       atomic, a failure reported after the other metrics) writes the raw
       predictions to that ``.pkl``; a folder or an existing file there is
       refused (:func:`add_dump`).
    4. ``show_dir``: the task's visualization hook draws every prediction
       there; a folder inside the data or holding files is refused
       (:func:`enable_show_dir`).
    5. ``tta``: the model is wrapped in ``tta_model`` and the test pipeline
       becomes ``tta_pipeline``.
    6. ``compiled`` / ``dtype='bf16'``: ``InferenceSpeedHook`` compiles the
       network and/or runs it under bf16 autocast (the dtype is checked
       against the device first).
    7. Class / keypoint disagreements are refused (:func:`check_classes`).

    Args:
        cfg: a config from :func:`load_config`.
        checkpoint: an official ``.safetensors`` or a ``.pth`` of training.
        work_dir: where logs and metrics go.
        launcher: as for training.
        out: a ``.pkl`` for the raw predictions.
        show_dir: where drawings of the predictions go.
        tta: test-time augmentation.
        compiled: ``torch.compile`` the network.
        dtype: ``'fp32'`` or ``'bf16'``.
        notes: receives what was decided on the way (an FSDP config tested
            in one process), for the console.

    Returns:
        The folder the drawings go to with ``show_dir``, else None.

    Raises:
        RunConfigError: with what to do instead.
    """
    cfg.launcher = launcher
    set_work_dir(cfg, work_dir)
    plain_runner_for_fsdp_test(cfg, notes)
    set_checkpoint(cfg, checkpoint)
    if cfg.get('test_dataloader') is None or cfg.get('test_evaluator') is None:
        raise RunConfigError(
            f'{cfg.filename} has no test_dataloader/test_evaluator to test '
            'with.')
    check_classes(cfg)
    if out:
        add_dump(cfg, out)
    images_dir = enable_show_dir(cfg, show_dir) if show_dir else None
    if tta:
        enable_tta(cfg)
    if dtype != 'fp32':
        try:  # mmengine's runner uses the GPU when there is one
            check_dtype(dtype, 'cuda' if torch.cuda.is_available() else 'cpu')
        except ValueError as err:
            raise RunConfigError(str(err)) from err
    if compiled or dtype != 'fp32':
        cfg.custom_hooks = list(cfg.get('custom_hooks') or []) + [
            dict(type=SPEED_HOOK, compile=compiled, dtype=dtype)]
    return images_dir
