"""Build a Sapiens2 task model from a config, with checked weights.

Like the official ``init_model`` and mmpose/mmseg's: load the config, drop the
backbone's ``init_cfg`` (so pretrain weights are not fetched), build, load the
checkpoint, attach ``cfg`` and ``dataset_meta``, move to the device and switch to
eval mode. Unlike them the checkpoint load is strict: official ``.safetensors``
task files (``backbone.`` / ``decode_head.`` keys) and mmengine ``.pth`` files
are renamed to this package's layout and every mismatching key is reported
(the official code prints the mismatches and carries on with random weights).
"""
import os
import os.path as osp
from pathlib import Path
from typing import Optional, Union

import torch
from mmengine.config import Config
from torch import nn

from ..registry import MODELS
from ..runtime.devices import check_device
from ..utils import (
    detect_task,
    in_config_scope,
    load_state_dict_checked,
    official_to_package,
    read_checkpoint,
    register_all_modules,
)
from ..utils.cli_errors import unknown_type_message
from .tasks.base import find_task

ConfigType = Union[str, Path, Config]


def load_config(config: ConfigType) -> Config:
    """Read a config file (or pass a ``Config`` through) with a clear error."""
    if isinstance(config, Config):
        return config.copy()
    if not isinstance(config, (str, Path)):
        raise TypeError(
            f'config must be a path or an mmengine Config, got '
            f'{type(config).__name__}.')
    path = os.fspath(config)
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'Config file not found: {path!r}. Pass a file from configs/ '
            '(e.g. configs/pose/sapiens2-1b_8xb7-20k_sapiens308-1024x768.py).')
    try:
        return Config.fromfile(path)
    except SyntaxError as err:  # mmengine names neither file nor line
        raise ValueError(
            f'Config file {path!r} (or one of its _base_ files) is not valid '
            f'Python: {err.msg} at line {err.lineno}.') from None


def _config_name(config: ConfigType) -> str:
    return config.filename if isinstance(config, Config) else os.fspath(
        config)


def load_task_checkpoint(model: nn.Module, checkpoint: str,
                         task: str) -> None:
    """Load an official ``.safetensors`` or mmengine ``.pth`` task checkpoint.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds weights of another task (or only a backbone).
        CheckpointMismatchError: keys or shapes do not fit (e.g. another size).
    """
    state = read_checkpoint(checkpoint)
    try:
        found = detect_task(state)
    except ValueError:
        found = None  # unknown layout: the checked load below lists the keys
    if found is not None and found != task:
        hint = (' It holds only backbone (pretrain) weights; fine-tune a '
                'task model or download a task checkpoint.'
                if found == 'pretrain' else '')
        raise ValueError(
            f'Checkpoint {checkpoint!r} is a {found!r} checkpoint but the '
            f'config builds a {task!r} model.{hint} Pass a {task} checkpoint '
            'or a config of the matching task.')
    state = official_to_package(state, task)
    load_state_dict_checked(model, state, source=checkpoint)


def init_model(config: ConfigType,
               checkpoint: Optional[str] = None,
               device: Union[str, torch.device] = 'cpu',
               cfg_options: Optional[dict] = None,
               compile: bool = False,
               dtype: str = 'fp32') -> nn.Module:
    """Build a task model ready for inference.

    Args:
        config: config path or ``Config`` (any task config in ``configs/``).
        checkpoint: official ``.safetensors`` / mmengine ``.pth``; ``None``
            keeps random weights (tests, smoke runs).
        device: e.g. ``'cpu'``, ``'cuda:0'``.
        cfg_options: dotted overrides merged into the config (checked:
            unknown keys raise ``UnknownConfigKeyError``, see
            :mod:`sapiens2_mm.utils.cfg_options`).
        compile: ``torch.compile`` the backbone / neck / head
            (:func:`~sapiens2_mm.runtime.compilation.compile_model`; eager with a
            warning where no compiler is available).
        dtype: ``'fp32'`` or ``'bf16'`` (autocast, see
            :mod:`sapiens2_mm.runtime.precision`).

    Returns:
        The model in eval mode on ``device`` with ``model.cfg`` (the config),
        ``model.task`` (a registered task name, see
        :mod:`sapiens2_mm.apis.tasks`) and ``model.dataset_meta`` (the task's
        meta: keypoint names/colors/skeleton/flip indices for pose;
        ``classes`` / ``palette`` for seg).
    """
    check_device(str(device))  # 'gpu': our message, not torch's
    cfg = load_config(config)
    if cfg_options:
        from ..utils.cfg_options import apply_cfg_options
        apply_cfg_options(cfg, cfg_options)
    register_all_modules()
    spec = find_task(cfg)
    task = spec.name
    backbone = cfg.model.get('backbone')
    if 'pretrained' in cfg.model:  # mmseg's way to name backbone weights
        cfg.model.pretrained = None
    if backbone is not None:
        backbone['init_cfg'] = None
        # Activation checkpointing only slows inference down.
        if 'with_cp' in backbone:
            backbone['with_cp'] = False
    spec.prepare_model_config(cfg)
    meta = spec.dataset_meta(cfg)  # before building: config errors first
    try:
        with in_config_scope(cfg):  # stock mmpose / mmseg configs too
            model = MODELS.build(cfg.model)
    except KeyError as err:
        message = unknown_type_message(err)
        if message is None:
            raise
        raise ValueError(f'{message} ({_config_name(config)})') from None
    if checkpoint is not None:
        load_task_checkpoint(model, checkpoint, task)
    model.cfg = cfg
    model.task = task
    model.dataset_meta = meta
    model = model.to(device).eval()
    from ..runtime.speedups import apply_speedups
    apply_speedups(model, compile=compile, dtype=dtype)
    return model
