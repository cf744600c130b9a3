"""Load a checkpoint (official ``.safetensors`` or ``.pth``) strictly, by hook.

mmengine's ``load_from`` reads only torch files and loads with ``strict=False``,
so a checkpoint for another task or model size "loads" with a warning and the
test reports garbage. This hook reads any checkpoint
:func:`sapiens2_mm.utils.read_checkpoint` understands (official Sapiens2 task
``.safetensors``, mmengine ``.pth``) and loads it with
:func:`sapiens2_mm.utils.load_state_dict_checked`, which fails listing every
missing, unexpected and mis-shaped key. ``tools/test.py`` installs it.
"""
from typing import Dict, Optional

import torch
from mmengine.hooks import Hook
from mmengine.model import BaseTTAModel, is_model_wrapper

from ...registry import HOOKS
from ...utils.checkpoint import load_state_dict_checked, read_checkpoint


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
        from ...utils.official_keys import detect_task, official_to_package
        return official_to_package(state, detect_task(state))
    return state


@HOOKS.register_module()
class CheckedCheckpointLoadHook(Hook):
    """Strictly load ``checkpoint`` into the model before the run starts.

    Args:
        checkpoint: path of a ``.safetensors`` or torch checkpoint.
    """

    priority = 'VERY_HIGH'

    def __init__(self, checkpoint: str):
        self.checkpoint = checkpoint
        self.loaded: Optional[int] = None

    def before_run(self, runner) -> None:
        """Read, map and load the weights; record the number of tensors."""
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        if isinstance(model, BaseTTAModel):
            # Test-time augmentation wraps the task model in ``.module``; the
            # checkpoint holds the task model's keys.
            model = model.module
        state = map_official_keys(model, read_checkpoint(self.checkpoint))
        load_state_dict_checked(model, state, source=self.checkpoint)
        self.loaded = len(state)
        runner.logger.info(
            f'Loaded {self.loaded} tensors from {self.checkpoint} (all keys '
            'and shapes match the model).')
