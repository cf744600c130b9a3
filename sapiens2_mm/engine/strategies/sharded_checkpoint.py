"""Write and read sharded checkpoints of an FSDP run (every rank its own).

mmengine 0.10.7 has two checkpoint kinds for FSDP: ``'full'`` gathers the
whole model and optimizer state on rank 0 (61 GB for a 5B resume, then read
whole by every rank on resume) and ``'local'`` writes per-rank FSDP flat
shards that nothing can read back. Here each rank writes what it holds of the
model and optimizer state through torch.distributed.checkpoint (DCP) and
reads it back on resume; the layout is described in
:mod:`sapiens2_mm.utils.sharded_checkpoint`.

What a rank holds of a parameter under FSDP1 (``use_orig_params=True``) is a
contiguous range of the flattened parameter. Each parameter (and each of its
optimizer state tensors) is stored as a 1-D tensor of the parameter's numel
whose chunks are those ranges (DCP's ``CheckpointableTensor`` fields on a
view of the rank's own tensor), so a rank writes from and reads into its
tensors directly: no all-gather, no copy of the state. torch's own
``get_state_dict`` for FSDP1 all-gathers every parameter and copies it into
ShardedTensors, which held the optimizer state twice more on resume
(measured with tools/benchmarks/fsdp_memory.py). A checkpoint reads back on
another number of ranks (DCP matches the ranges), and
tools/model_converters/consolidate_sharded_checkpoint.py reshapes the 1-D
tensors into a plain ``.pth``.
"""
import os
import os.path as osp
import shutil
from typing import Dict, Optional, Tuple

import torch
import torch.distributed.checkpoint as dcp
from mmengine.dist import barrier, is_main_process
from torch import nn
from torch.distributed.checkpoint import DefaultLoadPlanner
from torch.distributed.checkpoint.state_dict import _init_optim_state
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from ...utils.atomic_file import fsync_path
from ...utils.sharded_checkpoint import (
    EXTRA_STATE,
    PARAM_SHAPES,
    TENSOR_KEYS,
    read_extra_state,
    sharded_checkpoint_problem,
)
from ...utils.user_errors import CheckpointError, ConfigError
from ..fsdp_shapes import plain_name
from .host_memory import release_freed_host_memory

# (the rank's tensor, its start in the flattened parameter or None when the
# rank holds none of it, the parameter's full shape)
Piece = Tuple[torch.Tensor, Optional[int], Tuple[int, ...]]


def _pieces(model: nn.Module) -> Dict[str, Piece]:
    """What this rank holds of each parameter, by plain name."""
    infos = {}
    for unit in FSDP.fsdp_modules(model):
        handle = unit._handle
        if handle is None:
            continue
        flat = handle.flat_param
        if flat._params is None:
            raise ConfigError(
                "state_dict_cfg='sharded' needs model_wrapper.use_orig_params="
                'True (the FSDP snippet sets it).')
        for param, info, shape in zip(flat._params, flat._shard_param_infos,
                                      flat._shapes):
            start = info.intra_param_start_idx if info.in_shard else None
            infos[id(param)] = (start, tuple(shape))
    pieces = {}
    for name, param in model.named_parameters():
        start, shape = infos.get(id(param), (0, tuple(param.shape)))
        pieces[plain_name(name)] = (param, start, shape)
    return pieces


def _global_view(tensor: torch.Tensor, start: Optional[int],
                 shape: Tuple[int, ...]) -> torch.Tensor:
    """A 1-D view of ``tensor`` that DCP reads as the range
    ``[start, start + numel)`` of a tensor of ``prod(shape)`` values."""
    view = tensor.detach().view(-1)
    view.global_shape = (int(torch.Size(shape).numel()),)
    if start is None or view.numel() == 0:
        chunks = ()
    else:
        chunks = (((start,), (0,), (view.numel(),)),)
    view.global_offsets = tuple(c[0] for c in chunks)
    view.local_offsets = tuple(c[1] for c in chunks)
    view.local_sizes = tuple(c[2] for c in chunks)
    return view


def _buffers(model: nn.Module) -> Dict[str, torch.Tensor]:
    """Persistent buffers by plain name (whole on every rank)."""
    out = {}
    for prefix, module in model.named_modules():
        for name, buf in module._buffers.items():
            if buf is None or name in module._non_persistent_buffers_set:
                continue
            out[plain_name(f'{prefix}.{name}' if prefix else name)] = buf
    return out


def _state(model: nn.Module, optimizer: Optional[torch.optim.Optimizer],
           ) -> Tuple[dict, Dict[str, Piece]]:
    """The DCP state dict over this rank's own tensors."""
    pieces = _pieces(model)
    weights = {name: _global_view(*piece) for name, piece in pieces.items()}
    weights.update(_buffers(model))
    state = dict(state_dict=weights)
    if optimizer is not None:
        state['optimizer'] = _optimizer_state(optimizer, pieces)
    return state, pieces


def _optimizer_state(optimizer: torch.optim.Optimizer,
                     pieces: Dict[str, Piece]) -> dict:
    """``optimizer.state_dict()`` keyed by parameter name, with the state
    tensors of a parameter's size as views like the parameter's."""
    names = {id(param): name for name, (param, _, _) in pieces.items()}
    per_param = {}
    for name, (param, start, shape) in pieces.items():
        if start is None or param not in optimizer.state:
            continue  # none of it here: another rank saves its state
        entry = {}
        for key, value in optimizer.state[param].items():
            if isinstance(value, torch.Tensor) and value.dim() and (
                    value.numel() == param.numel()):
                value = _global_view(value, start, shape)
            entry[key] = value
        per_param[name] = entry
    groups = []
    for group in optimizer.param_groups:
        saved = {k: v for k, v in group.items() if k != 'params'}
        saved['params'] = [names[id(p)] for p in group['params']]
        groups.append(saved)
    return dict(state=per_param, param_groups=groups)


def save_sharded(path: str, model: nn.Module,
                 optimizer: Optional[torch.optim.Optimizer],
                 checkpoint: dict) -> None:
    """Write ``checkpoint`` (mmengine's dict; its ``state_dict`` and
    ``optimizer`` are taken from ``model`` and ``optimizer``) to the folder
    ``path``. Every rank calls it.
    """
    state, pieces = _state(model, optimizer)
    if is_main_process() and osp.exists(path):
        # what an interrupted save left (other ranks' files of a larger run
        # would stay beside the new index otherwise)
        shutil.rmtree(path) if osp.isdir(path) else os.remove(path)
    barrier()
    os.makedirs(path, exist_ok=True)
    dcp.save(state, checkpoint_id=path)
    if is_main_process():
        extra = {k: v for k, v in checkpoint.items() if k not in TENSOR_KEYS}
        extra[PARAM_SHAPES] = {name: shape for name, (_, _, shape)
                               in pieces.items()}
        file = osp.join(path, EXTRA_STATE)
        torch.save(extra, file)
        fsync_path(file)
    barrier()


def load_sharded(path: str, model: nn.Module,
                 optimizer: Optional[torch.optim.Optimizer]) -> dict:
    """Load the folder ``path`` into ``model`` (and ``optimizer`` when
    given), each rank reading its ranges into its own tensors. Returns the
    rest of the checkpoint (``meta``, ``message_hub``, ...).

    Raises:
        ValueError: the folder is incomplete or unreadable, naming why.
    """
    problem = sharded_checkpoint_problem(path)
    if problem is not None:
        raise CheckpointError(
            f'Could not read checkpoint {path!r}: {problem}. Resume from an '
            'earlier checkpoint (--resume auto skips unreadable ones).')
    if optimizer is not None:
        # the state tensors to read into: torch's (private, torch 2.14)
        # zero-gradient step at lr 0, as its get_optimizer_state_dict takes;
        # none for parameters this rank holds nothing of, as in training
        _init_optim_state(optimizer)
        for param, start, _ in _pieces(model).values():
            if start is None:
                optimizer.state.pop(param, None)
    state, _ = _state(model, optimizer)
    expected = [] if optimizer is None else [
        list(g['params']) for g in state['optimizer']['param_groups']]
    # The default planner flattens ShardedTensors; there are none here. (With
    # torch's FSDP1 state dicts, a rank holding no shard of a tensor dropped
    # its key and the planner then misread the checkpoint as torch <= 2.3's.)
    dcp.load(state, checkpoint_id=path,
             planner=DefaultLoadPlanner(flatten_sharded_tensors=False))
    if optimizer is not None:
        _restore_param_groups(optimizer, state['optimizer']['param_groups'],
                              expected)
    release_freed_host_memory()
    return read_extra_state(path)


def _restore_param_groups(optimizer: torch.optim.Optimizer, loaded: list,
                          expected: list) -> None:
    """The loaded hyper-parameters (lr, betas, weight decay, ...) of each
    group, which must hold the parameters it held when saved."""
    names = [group['params'] for group in loaded]
    if names != expected:
        raise CheckpointError(
            'The optimizer parameter groups of the checkpoint hold other '
            'parameters than this optimizer\'s; resume with the config it was '
            'trained with.')
    for group, saved in zip(optimizer.param_groups, loaded):
        group.update({k: v for k, v in saved.items() if k != 'params'})
