"""Convert official Sapiens2 checkpoints to mmengine ``.pth`` files and back."""
import hashlib
import os
import os.path as osp
from typing import Optional

import torch

from ..version import __version__
from .checkpoint import read_checkpoint
from .official_keys import detect_task, official_to_package, package_to_official

TRAINING_STATE_KEYS = ('optimizer', 'message_hub', 'param_schedulers', 'ema_state_dict')


def _check_output(dst: str, overwrite: bool) -> None:
    if osp.exists(dst) and not overwrite:
        raise FileExistsError(
            f'{dst!r} exists; refusing to overwrite it. Pass --overwrite or '
            'choose another output path.')
    parent = osp.dirname(osp.abspath(dst))
    os.makedirs(parent, exist_ok=True)
    if not os.access(parent, os.W_OK):
        raise PermissionError(f'Output directory {parent!r} is not writable.')


def official_to_mmengine(src: str, dst: str, task: Optional[str] = None,
                         overwrite: bool = False) -> str:
    """Official ``.safetensors``/``.pth`` -> mmengine checkpoint ``.pth``.

    Args:
        src: official file (pretrain or task).
        dst: output ``.pth``; holds ``{'meta': ..., 'state_dict': ...}`` with the
            key names of this package's models (pose head under ``head.``).
        task: ``'pretrain'``, ``'pose'``, ``'seg'``, ... or None to detect.
        overwrite: replace an existing ``dst``.

    Returns:
        The task that was converted.
    """
    _check_output(dst, overwrite)
    state = read_checkpoint(src)
    task = task or detect_task(state)
    state = official_to_package(state, task)
    meta = dict(sapiens2_mm_version=__version__, task=task,
                converted_from=osp.basename(src))
    torch.save(dict(meta=meta, state_dict=state), dst)
    return task


def mmengine_to_official(src: str, dst: str, task: Optional[str] = None,
                         overwrite: bool = False) -> str:
    """mmengine checkpoint (ours) -> official-layout ``.safetensors``.

    Training state (optimizer, schedulers, message hub) is dropped; tensor
    dtypes are kept (the RoPE ``periods`` stay bfloat16).

    Returns:
        The task that was converted.
    """
    _check_output(dst, overwrite)
    if not dst.endswith('.safetensors'):
        raise ValueError(f'Output must be a .safetensors file, got {dst!r}.')
    from safetensors.torch import save_file
    state = read_checkpoint(src)
    task = task or detect_task(state)
    state = package_to_official(state, task)
    save_file({k: v.contiguous() for k, v in state.items()}, dst,
              metadata=dict(format='pt', task=task))
    return task


def publish_checkpoint(src: str, dst: str) -> str:
    """Strip training state, save, and append the sha256 prefix to the name.

    Args:
        src: a training checkpoint (``.pth``) written by mmengine.
        dst: output path, e.g. ``sapiens2-1b_pose.pth``; written as
            ``sapiens2-1b_pose-<sha256[:8]>.pth``.

    Returns:
        The final path.
    """
    checkpoint = torch.load(src, map_location='cpu', weights_only=True)
    if not isinstance(checkpoint, dict) or 'state_dict' not in checkpoint:
        raise ValueError(
            f'{src!r} is not an mmengine checkpoint (no "state_dict" entry).')
    for key in TRAINING_STATE_KEYS:
        checkpoint.pop(key, None)
    stem, ext = osp.splitext(dst)
    tmp = f'{stem}.tmp{ext or ".pth"}'
    os.makedirs(osp.dirname(osp.abspath(dst)), exist_ok=True)
    torch.save(checkpoint, tmp)
    with open(tmp, 'rb') as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    final = f'{stem}-{digest[:8]}{ext or ".pth"}'
    os.replace(tmp, final)
    return final
