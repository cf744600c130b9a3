"""Load a checkpoint (official ``.safetensors`` or ``.pth``) strictly, by hook.

mmengine's ``load_from`` reads only torch files and loads with ``strict=False``,
so a checkpoint for another task or model size "loads" with a warning and the
test reports garbage. This hook reads any checkpoint
:func:`sapiens2_mm.utils.read_checkpoint` understands (official Sapiens2 task
``.safetensors``, mmengine ``.pth``) and loads it with
:func:`sapiens2_mm.utils.load_state_dict_checked`, which fails listing every
missing, unexpected and mis-shaped key. ``tools/test.py`` installs it, and
``tools/train.py`` routes a config's ``load_from`` (fine-tuning) through it.
"""
from typing import Dict, Optional

import torch
from mmengine.hooks import Hook
from mmengine.model import BaseTTAModel, is_model_wrapper

from ...registry import HOOKS
from ...utils.checkpoint import check_state_dict, read_checkpoint, require_fit
from ...utils.official_keys import detect_task, official_to_package

LOAD_POINTS = ('before_run', 'before_train')


def map_official_keys(model: torch.nn.Module,
                      state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Rename official checkpoint keys to the model's, where the layouts differ.

    Official task files call every head ``decode_head.``; mmpose estimators
    call it ``head.``. When the checkpoint has ``decode_head.`` keys and the
    model does not, the task's renames of
    :func:`sapiens2_mm.utils.official_keys.official_to_package` apply. A model
    (or head) with other needs provides ``convert_official_state_dict(state)``,
    which takes precedence. Files saved by sapiens2_mm pass unchanged.
    """
    for owner in (model, getattr(model, 'head', None),
                  getattr(model, 'decode_head', None)):
        convert = getattr(owner, 'convert_official_state_dict', None)
        if callable(convert):
            return convert(state)
    prefix = 'decode_head.'
    if any(k.startswith(prefix) for k in state) and not any(
            k.startswith(prefix) for k in model.state_dict()):
        return official_to_package(state, detect_task(state))
    return state


@HOOKS.register_module()
class CheckedCheckpointLoadHook(Hook):
    """Strictly load ``checkpoint`` into the model before the run starts.

    Args:
        checkpoint: path of a ``.safetensors`` or torch checkpoint.
        load_at: ``'before_run'`` (testing: ``Runner.test`` initializes no
            weights) or ``'before_train'`` (fine-tuning: after the Runner's
            ``init_weights``, which would overwrite an earlier load, and before
            the first iteration).
        allow_partial: load the keys whose names and shapes fit and log every
            key left out, instead of refusing (an intentionally partial load,
            e.g. a pose checkpoint with another number of keypoints).
    """

    priority = 'VERY_HIGH'

    def __init__(self, checkpoint: str, load_at: str = 'before_run',
                 allow_partial: bool = False):
        if load_at not in LOAD_POINTS:
            raise ValueError(
                f'load_at must be one of {LOAD_POINTS}, got {load_at!r}')
        self.checkpoint = checkpoint
        self.load_at = load_at
        self.allow_partial = allow_partial
        self.loaded: Optional[int] = None

    def before_run(self, runner) -> None:
        if self.load_at == 'before_run':
            self.load(runner)

    def before_train(self, runner) -> None:
        if self.load_at == 'before_train':
            self.load(runner)

    def load(self, runner) -> None:
        """Read, map and load the weights; record the number of tensors."""
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        if isinstance(model, BaseTTAModel):
            # Test-time augmentation wraps the task model in ``.module``; the
            # checkpoint holds the task model's keys.
            model = model.module
        self.loaded = load_checkpoint_into(model, self.checkpoint,
                                           self.allow_partial, runner.logger)


def load_checkpoint_into(model: torch.nn.Module, checkpoint: str,
                         allow_partial: bool, logger) -> int:
    """Read ``checkpoint``, map official keys, load it into ``model``.

    Strict (every key and shape must match) unless ``allow_partial``, which
    loads the fitting keys and logs the rest. Returns the tensors loaded.
    """
    state = checked_checkpoint_state(model, checkpoint, allow_partial, logger)
    model.load_state_dict(state, strict=not allow_partial)
    return len(state)


def checked_checkpoint_state(model: torch.nn.Module, checkpoint: str,
                             allow_partial: bool, logger,
                             lazy: bool = False) -> Dict[str, torch.Tensor]:
    """The tensors of ``checkpoint`` to load into ``model``, checked.

    Official keys are mapped; every key and shape must fit, else
    :class:`CheckpointMismatchError` lists the mismatches. With
    ``allow_partial`` the fitting tensors are returned and the rest logged.
    Only names and shapes are compared, so ``model`` may be on the meta
    device; ``lazy`` maps the file instead of reading it (see
    :func:`sapiens2_mm.utils.read_checkpoint`).
    """
    state = map_official_keys(model, read_checkpoint(checkpoint, lazy=lazy))
    if not allow_partial:
        require_fit(model, state, source=checkpoint)
        logger.info(f'Loaded {len(state)} tensors from {checkpoint} (all '
                    'keys and shapes match the model).')
        return state
    own = model.state_dict()
    fitting = {k: v for k, v in state.items()
               if k in own and tuple(v.shape) == tuple(own[k].shape)}
    report = check_state_dict(model, state)
    logger.warning(
        f'Partial load (allow_partial): {len(fitting)} of {len(own)} model '
        f'tensors loaded from {checkpoint}; the rest keep their '
        f'initialization.{report}')
    return fitting
