"""The on-disk layout of a sharded (FSDP ``state_dict_cfg='sharded'``)
checkpoint, and whether one is complete.

A sharded checkpoint is a folder named like a checkpoint file
(``iter_300.pth/``, so that ``last_checkpoint``, ``--resume auto`` and
``max_keep_ckpts`` treat it like one):

* ``__<rank>_0.distcp``: what rank ``<rank>`` holds of the model weights and
  the optimizer state, written by that rank (torch.distributed.checkpoint);
* ``.metadata``: torch.distributed.checkpoint's index of every tensor's shards;
* ``extra_state.pth``: everything else of an mmengine checkpoint (``meta``,
  ``message_hub``, ``param_schedulers``, ...), written by rank 0.

Writing and reading are the FSDP strategy's job
(``sapiens2_mm/engine/strategies/sharded_checkpoint.py``); the offline
consolidation into one ``.pth`` is ``tools/model_converters/
consolidate_sharded_checkpoint.py``. This module only knows the layout, so
that the resume logic (``utils/work_dir.py``) can check a folder without
torch.distributed.
"""
import os
import os.path as osp
from typing import Optional

from .user_errors import CheckpointError

METADATA = '.metadata'
EXTRA_STATE = 'extra_state.pth'
TENSOR_KEYS = ('state_dict', 'optimizer')
# in extra_state: each parameter's shape (weights and their optimizer state
# are stored flattened, as FSDP1 splits them)
PARAM_SHAPES = 'param_shapes'


def is_sharded_checkpoint(path: str) -> bool:
    """Whether ``path`` is a folder holding a sharded checkpoint's index."""
    return osp.isdir(path) and osp.isfile(osp.join(path, METADATA))


def read_metadata(path: str):
    """torch.distributed.checkpoint's ``Metadata`` of the folder ``path``."""
    from torch.distributed.checkpoint import FileSystemReader
    return FileSystemReader(path).read_metadata()


def read_extra_state(path: str, mmap: bool = False) -> dict:
    """The non-tensor part (``meta``, ``message_hub``, ...) of ``path``."""
    import torch

    from .safe_torch_load import allow_mmengine_checkpoint_globals
    allow_mmengine_checkpoint_globals()
    return torch.load(osp.join(path, EXTRA_STATE), map_location='cpu',
                      weights_only=True, mmap=mmap)


def sharded_checkpoint_problem(path: str) -> Optional[str]:
    """Why the folder ``path`` is not a complete sharded checkpoint; None
    when it is.

    Reads the index and checks that every shard it lists lies within a file
    of the folder (a rank that died while writing leaves its file short or
    missing), and that ``extra_state.pth`` reads. No tensor data is read.
    """
    if not osp.isdir(path):
        return 'no such folder'
    if not osp.isfile(osp.join(path, METADATA)):
        return (f'no {METADATA} (not a sharded checkpoint, or its save did '
                'not finish)')
    try:
        metadata = read_metadata(path)
    except Exception as err:  # noqa: BLE001 - the reason is reported
        return f'{METADATA} unreadable ({type(err).__name__}: {err})'
    needed = {}
    for info in (metadata.storage_data or {}).values():
        end = info.offset + info.length
        needed[info.relative_path] = max(needed.get(info.relative_path, 0),
                                         end)
    for name, end in sorted(needed.items()):
        file = osp.join(path, name)
        if not osp.isfile(file):
            return f'shard file {name} missing'
        if os.path.getsize(file) < end:
            return (f'shard file {name} truncated ({os.path.getsize(file)} '
                    f'bytes, the index needs {end})')
    if not osp.isfile(osp.join(path, EXTRA_STATE)):
        return f'{EXTRA_STATE} missing'
    try:
        extra = read_extra_state(path, mmap=True)
    except Exception as err:  # noqa: BLE001 - the reason is reported
        return f'{EXTRA_STATE} unreadable ({type(err).__name__}: {err})'
    if not isinstance(extra, dict) or 'meta' not in extra:
        return f'{EXTRA_STATE} holds no meta'
    return None


def read_sharded_checkpoint(path: str, with_optimizer: bool = False) -> dict:
    """The whole checkpoint in this process, as a plain mmengine dict.

    Args:
        path: a sharded checkpoint folder.
        with_optimizer: also gather the optimizer state (keyed by parameter
            name, as FSDP's full optimizer state dict), else weights only.

    Returns:
        ``{'state_dict': {name: tensor}, 'meta': ..., ...}`` as a
        ``state_dict_cfg='full'`` run would have saved it.

    Raises:
        ValueError: the folder is incomplete or unreadable, naming why.
    """
    import torch
    from torch.distributed.checkpoint.state_dict_loader import (
        _load_state_dict_from_keys,
    )
    problem = sharded_checkpoint_problem(path)
    if problem is not None:
        raise CheckpointError(f'Could not read checkpoint {path!r}: {problem}.')
    keys = set(TENSOR_KEYS) if with_optimizer else {'state_dict'}
    keys &= set(_top_level_keys(path))
    # torch's reader for one process (no process group), which
    # torch.distributed.checkpoint.format_utils.dcp_to_torch_save uses too
    loaded = _load_state_dict_from_keys(keys, checkpoint_id=path)
    checkpoint = read_extra_state(path)
    shapes = checkpoint.pop(PARAM_SHAPES)
    weights = loaded['state_dict']
    for name, shape in shapes.items():
        weights[name] = weights[name].reshape(shape)
    for name, entry in loaded.get('optimizer', {}).get('state', {}).items():
        numel = weights[name].numel()
        for key, value in entry.items():
            if isinstance(value, torch.Tensor) and value.dim() == 1 and (
                    value.numel() == numel):
                entry[key] = value.reshape(shapes[name])
    checkpoint.update(loaded)
    return checkpoint


def _top_level_keys(path: str) -> set:
    metadata = read_metadata(path)
    return {key.split('.', 1)[0] for key in metadata.state_dict_metadata}
