"""Write and read sharded checkpoints of an FSDP run (every rank its own).

mmengine 0.10.7 has two checkpoint kinds for FSDP: ``'full'`` gathers the
whole model and optimizer state on rank 0 (61 GB for a 5B resume, then read
whole by every rank on resume) and ``'local'`` writes per-rank FSDP flat
shards that nothing can read back. Here each rank writes its shards of the
model and optimizer state through torch.distributed.checkpoint and reads them
back on resume; the layout is described in
:mod:`sapiens2_mm.utils.sharded_checkpoint`.

The state dicts come from torch's ``get_state_dict`` (parameter names without
FSDP's wrapper names, the optimizer state keyed by those names), so a
checkpoint can be read by another number of ranks and consolidated offline
into a plain ``.pth`` (tools/model_converters/consolidate_sharded_checkpoint.py).
"""
import contextlib
import os
import os.path as osp
import shutil
import warnings
from typing import Iterator, Optional

import torch
import torch.distributed.checkpoint as dcp
from mmengine.dist import barrier, is_main_process
from torch import nn
from torch.distributed.checkpoint import DefaultLoadPlanner
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from ...utils.atomic_file import fsync_path
from ...utils.sharded_checkpoint import (
    EXTRA_STATE,
    TENSOR_KEYS,
    read_extra_state,
    sharded_checkpoint_problem,
)

SHARDED = StateDictOptions(full_state_dict=False, cpu_offload=False)


@contextlib.contextmanager
def _quiet_sharded_tensor() -> Iterator[None]:
    """FSDP1's sharded state dicts are ShardedTensors, for which torch 2.14
    warns at every tensor ("Please use DTensor instead"); one note in the
    docs is enough."""
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='.*DTensor instead.*')
        warnings.filterwarnings('ignore', message='.*_get_pg_default_device.*')
        warnings.filterwarnings('ignore',
                                message='.*Multiple backends are registered.*')
        yield


def save_sharded(path: str, model: nn.Module,
                 optimizer: Optional[torch.optim.Optimizer],
                 checkpoint: dict) -> None:
    """Write ``checkpoint`` (mmengine's dict, whose ``state_dict`` and
    ``optimizer`` are taken from ``model`` and ``optimizer``) to the folder
    ``path``. Every rank calls it.
    """
    with _quiet_sharded_tensor():
        if optimizer is not None:
            model_state, optim_state = get_state_dict(
                model, optimizer, options=SHARDED)
        else:
            model_state, optim_state = get_model_state_dict(
                model, options=SHARDED), None
        tensors = dict(state_dict=model_state)
        if optim_state is not None:
            tensors['optimizer'] = optim_state
        if is_main_process() and osp.exists(path):
            # what an interrupted save left (other ranks' files of a larger
            # run would stay beside the new index otherwise)
            shutil.rmtree(path) if osp.isdir(path) else os.remove(path)
        barrier()
        os.makedirs(path, exist_ok=True)
        dcp.save(tensors, checkpoint_id=path)
    if is_main_process():
        extra = {k: v for k, v in checkpoint.items() if k not in TENSOR_KEYS}
        file = osp.join(path, EXTRA_STATE)
        torch.save(extra, file)
        fsync_path(file)
    barrier()


def load_sharded(path: str, model: nn.Module,
                 optimizer: Optional[torch.optim.Optimizer]) -> dict:
    """Load the folder ``path`` into ``model`` (and ``optimizer`` when
    given); each rank reads its shards. Returns the rest of the checkpoint
    (``meta``, ``message_hub``, ...).

    Raises:
        ValueError: the folder is incomplete or unreadable, naming why.
    """
    problem = sharded_checkpoint_problem(path)
    if problem is not None:
        raise ValueError(
            f'Could not read checkpoint {path!r}: {problem}. Resume from an '
            'earlier checkpoint (--resume auto skips unreadable ones).')
    with _quiet_sharded_tensor():
        if optimizer is not None:
            model_state, optim_state = get_state_dict(
                model, optimizer, options=SHARDED)
            state = dict(state_dict=model_state, optimizer=optim_state)
        else:
            state = dict(state_dict=get_model_state_dict(model,
                                                         options=SHARDED))
        # Upstream defect (torch 2.14 DefaultLoadPlanner): flattening drops
        # a ShardedTensor of which this rank holds no shard (FSDP1 leaves
        # small parameters of a unit on one rank), the planner reads the
        # missing key as a checkpoint of torch <= 2.3, switches to that key
        # layout and fails ("Missing key in checkpoint state_dict:
        # optimizer.param_groups"). FSDP1's state dicts hold no nested
        # ShardedTensors, so there is nothing to flatten.
        dcp.load(state, checkpoint_id=path,
                 planner=DefaultLoadPlanner(flatten_sharded_tensors=False))
        set_model_state_dict(model, state['state_dict'], options=SHARDED)
        if optimizer is not None:
            set_optimizer_state_dict(model, optimizer, state['optimizer'],
                                     options=SHARDED)
    return read_extra_state(path)
