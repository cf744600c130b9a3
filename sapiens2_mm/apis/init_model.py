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
from ..utils.cli_errors import unknown_types_as_config_errors
from ..utils.config_file import ConfigType, load_config
from ..utils.user_errors import CheckpointError, ConfigError
from .base_inferencer import config_test_pipeline
from .tasks.base import find_task


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
        raise CheckpointError(
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

    The task is worked out here, once (:func:`~sapiens2_mm.apis.tasks.
    find_task`); what follows from it is recorded on the model.

    Returns:
        The model in eval mode on ``device`` with ``model.cfg`` (the config;
        a bare model config gets the task's default ``test_pipeline``),
        ``model.task`` (a registered task name, see
        :mod:`sapiens2_mm.apis.tasks`) and ``model.dataset_meta`` (the task's
        meta: keypoint names/colors/skeleton/flip indices for pose;
        ``classes`` / ``palette`` for seg).
    """
    check_device(str(device))  # 'gpu': our message, not torch's
    cfg = load_config(config, cfg_options)
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
    if config_test_pipeline(cfg) is None:  # a bare model config
        steps = spec.default_inference_pipeline(cfg)
        if steps is not None:
            cfg.test_pipeline = steps
    meta = spec.dataset_meta(cfg)  # before building: config errors first
    try:
        with unknown_types_as_config_errors(_config_name(config)), \
                in_config_scope(cfg):  # stock mmpose / mmseg configs too
            model = MODELS.build(cfg.model)
    except ValueError as err:  # a value of the config a part refuses
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(str(err)) from err
    if checkpoint is not None:
        load_task_checkpoint(model, checkpoint, task)
    model.cfg = cfg
    model.task = task
    model.dataset_meta = meta
    model = model.to(device).eval()
    from ..runtime.speedups import apply_speedups
    apply_speedups(model, compile=compile, dtype=dtype)
    return model
