"""Prepare a config for ``tools/test.py``: the testing policy.

:func:`prepare_test_config` lists every rewrite in its docstring; each step
is also a public function (``set_checkpoint``, ``add_dump``, ...). User
errors raise :class:`~sapiens2_mm.apis.run_config.RunConfigError`.

This module lives in ``apis`` because it asks the task registry (which hook
draws a config's predictions).
"""
import os
import os.path as osp
from typing import List, Optional

import torch
from mmengine.config import Config

from ..runtime.precision import check_dtype
from ..utils.output_paths import (
    OutputPathError,
    check_output_file,
    check_outside_folders,
)
from .run_config import (
    SCOPE,
    RunConfigError,
    check_classes,
    ensure_writable_dir,
    is_fsdp,
    refuse_sharded_folder,
    set_work_dir,
    with_load_hook,
)
from .tasks import find_task

DUMP_METRIC = SCOPE + 'AtomicDumpResults'
SPEED_HOOK = SCOPE + 'InferenceSpeedHook'
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
    with_load_hook(cfg, checkpoint=checkpoint)


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

    1. ``launcher`` and the work dir as in :func:`~sapiens2_mm.apis.
       train_config.prepare_train_config`; an
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
    7. Class / keypoint disagreements are refused
       (:func:`~.run_config.check_classes`).

    Args:
        cfg: a config from :func:`~sapiens2_mm.utils.config_file.load_config`.
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
