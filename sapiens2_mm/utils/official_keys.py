"""Key layout of official Sapiens2 files vs this package's models.

Official task checkpoints name their parts ``backbone.`` and ``decode_head.``.
A model may call them otherwise (mmpose's ``TopdownPoseEstimator`` calls its
head ``head.``); everything else is identical, so conversion is a prefix
rename per task. The layout is declared by its owner, the head class (as timm
keeps a model's checkpoint filter beside the model), in a class attribute::

    @MODELS.register_module()
    class PoseHeatmapHead(BaseHead):
        official_layout = OfficialLayout(
            'pose', 'conv_pose.weight', renames={'decode_head.': 'head.'})

and read here from the ``MODELS`` registry, so this module imports no model.
A file of backbone keys only (``cls_token``) is the ``'pretrain'`` layout.
"""
from dataclasses import dataclass, field
from typing import Dict, Mapping, Tuple

import torch

from ..registry import MODELS
from .user_errors import CheckpointError

PRETRAIN = 'pretrain'


@dataclass(frozen=True)
class OfficialLayout:
    """How official checkpoints of one task name their keys.

    Attributes:
        task: the task name (``model.task``, ``--task`` of the converters).
        marker: a key suffix only this task's official head has (e.g.
            ``'conv_seg.weight'``), to recognise a checkpoint's task.
        renames: official key prefix -> this package's prefix (identity when
            empty).
    """
    task: str
    marker: str
    renames: Mapping[str, str] = field(default_factory=dict)


def official_layouts() -> Dict[str, OfficialLayout]:
    """Task name -> layout, from every registered model class that declares
    an ``official_layout`` (subclasses inheriting one count once).

    Raises:
        ValueError: two classes declare different layouts for one task.
    """
    MODELS.import_from_location()
    layouts: Dict[str, OfficialLayout] = {}
    owners: Dict[str, str] = {}
    for name, cls in MODELS.module_dict.items():
        layout = getattr(cls, 'official_layout', None)
        if not isinstance(layout, OfficialLayout):
            continue
        known = layouts.setdefault(layout.task, layout)
        if known != layout:
            raise ValueError(
                f'{name} and {owners[layout.task]} declare different official '
                f'key layouts for task {layout.task!r}: {layout} vs {known}.')
        owners.setdefault(layout.task, name)
    return layouts


def official_tasks() -> Tuple[str, ...]:
    """``'pretrain'`` and every task with a declared layout (the converters'
    ``--task`` choices)."""
    return (PRETRAIN, *official_layouts())


def detect_task(state_dict: Mapping[str, torch.Tensor]) -> str:
    """Guess the task of an official or converted state dict.

    Returns:
        a task of :func:`official_tasks`; ``'pretrain'`` for backbone keys
        only (unprefixed, or all under ``backbone.``).

    Raises:
        ValueError: the keys match no known layout (e.g. a backbone with
            the head of a task that declares no official layout).
    """
    for task, layout in official_layouts().items():
        if any(key.endswith(layout.marker) for key in state_dict):
            return task
    if 'cls_token' in state_dict or ('backbone.cls_token' in state_dict and all(
            key.startswith('backbone.') for key in state_dict)):
        return PRETRAIN  # bare backbone keys, or only 'backbone.' ones
    sample = ', '.join(list(state_dict)[:5])
    raise CheckpointError(
        f'Cannot tell the Sapiens2 task of a checkpoint with keys {sample}, ...; '
        f'pass the task explicitly (one of {official_tasks()}).')


def official_renames(task: str) -> Dict[str, str]:
    """Official key prefix -> this package's prefix for ``task`` (empty for a
    task that declares no layout: its keys are the official ones)."""
    layout = official_layouts().get(task)
    return dict(layout.renames) if layout is not None else {}


def rename_prefixes(state_dict: Mapping[str, torch.Tensor],
                    renames: Mapping[str, str]) -> Dict[str, torch.Tensor]:
    """``state_dict`` with the first matching key prefix of ``renames``
    replaced (keys without one unchanged, order kept)."""
    out = {}
    for key, value in state_dict.items():
        for old, new in renames.items():
            if key.startswith(old):
                key = new + key[len(old):]
                break
        out[key] = value
    return out


def official_to_package(state_dict: Mapping[str, torch.Tensor],
                        task: str) -> Dict[str, torch.Tensor]:
    """Rename official keys to this package's model keys for ``task``."""
    return rename_prefixes(state_dict, official_renames(task))


def package_to_official(state_dict: Mapping[str, torch.Tensor],
                        task: str) -> Dict[str, torch.Tensor]:
    """Inverse of :func:`official_to_package`."""
    inverse = {new: old for old, new in official_renames(task).items()}
    return rename_prefixes(state_dict, inverse)
