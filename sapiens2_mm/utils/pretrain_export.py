"""Export a pretrained backbone in the official Sapiens2 pretrain layout.

A ``Sapiens2Pretrainer`` checkpoint holds the student backbone under
``backbone.`` and the EMA teacher's under ``teacher.module.backbone.``. The
official pretrain files (``sapiens2_*_pretrain.safetensors``) hold the bare
backbone keys, float32 except ``rope_embed.periods`` (bfloat16); the official
loader also accepts a ``.pth`` with ``{"teacher": {"backbone.<key>": ...}}``.
"""
import os.path as osp
from typing import Dict, Mapping, Optional

import torch

from ..version import __version__
from .atomic_file import atomic_open, atomic_output
from .checkpoint_convert import _check_output, load_mmengine_file
from .output_paths import OutputPathError, same_file
from .user_errors import CheckpointError, OptionError

SOURCES = {
    'teacher': 'teacher.module.backbone.',
    'student': 'backbone.',
}
PERIODS_KEY = 'rope_embed.periods'


def pretrain_backbone_state(state_dict: Mapping[str, torch.Tensor],
                            which: str = 'teacher',
                            source: str = 'checkpoint'
                            ) -> Dict[str, torch.Tensor]:
    """Bare backbone keys of the teacher (or student), official dtypes.

    Args:
        state_dict: a ``Sapiens2Pretrainer`` state dict.
        which: ``'teacher'`` (the released weights are the EMA teacher's) or
            ``'student'``.
        source: name used in error messages.

    Raises:
        ValueError: unknown ``which``, or no backbone under its prefix (e.g.
            a checkpoint without a teacher).
    """
    if which not in SOURCES:
        raise OptionError(
            f'which must be one of {sorted(SOURCES)}, got {which!r}')
    prefix = SOURCES[which]
    state = {
        k[len(prefix):]: v
        for k, v in state_dict.items() if k.startswith(prefix)
    }
    if not state:
        found = sorted({k.split('.', 1)[0] for k in state_dict})
        raise CheckpointError(
            f'{source} has no {which} backbone (no "{prefix}*" keys; top-level '
            f'names: {found}). Export needs a Sapiens2Pretrainer checkpoint; '
            'use --which student for one without an EMA teacher.')
    if PERIODS_KEY not in state or 'cls_token' not in state:
        raise CheckpointError(
            f'The {which} backbone in {source} lacks {PERIODS_KEY} or '
            'cls_token; it is not a Sapiens2 backbone.')
    return {key: value.detach().to(
        torch.bfloat16 if key == PERIODS_KEY else torch.float32).contiguous()
        for key, value in state.items()}


def export_pretrain(src: str, dst: str, which: str = 'teacher',
                    pth: Optional[str] = None,
                    overwrite: bool = False) -> Dict[str, torch.Tensor]:
    """Write ``dst`` (.safetensors) and optionally ``pth`` from ``src``.

    Args:
        src: mmengine checkpoint of a ``Sapiens2Pretrainer`` run.
        dst: output ``sapiens2_*_pretrain.safetensors`` (bare keys).
        which: ``'teacher'`` or ``'student'``.
        pth: optional output ``.pth`` holding ``{"teacher": {"backbone.*"}}``
            (the student's weights under that name with ``which='student'``,
            since that is the name the official loader reads).
        overwrite: replace existing outputs.

    Returns:
        The exported state dict.

    Raises:
        OutputPathError: ``dst`` or ``pth`` is (a link to) ``src``, or both
            name one file; refused with or without ``overwrite``.
    """
    if not dst.endswith('.safetensors'):
        raise OutputPathError(f'dst must end with .safetensors, got {dst!r}')
    if pth and same_file(dst, pth):
        raise OutputPathError(
            f'The .safetensors output {dst!r} and --pth {pth!r} are one '
            'file; give two paths.')
    _check_output(dst, overwrite, [src])
    if pth:
        _check_output(pth, overwrite, [src])
    checkpoint = load_mmengine_file(src)
    state = pretrain_backbone_state(checkpoint.get('state_dict', checkpoint),
                                    which, src)
    from safetensors.torch import save_file
    with atomic_output(dst) as tmp:
        save_file(state, tmp, metadata=dict(
            format='pt', weights=which,
            exported_by=f'sapiens2_mm {__version__}',
            source=osp.basename(src)))
    if pth:
        with atomic_open(pth) as f:
            torch.save(dict(teacher={f'backbone.{k}': v
                                     for k, v in state.items()},
                            meta=dict(weights=which,
                                      source=osp.basename(src))), f)
    return state
