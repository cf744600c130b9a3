"""Read official Sapiens2 checkpoints (.safetensors / .pth) and load them checked.

Official files come in three shapes: bare backbone keys (pretrain
``.safetensors``), full task estimators with ``backbone.`` / ``decode_head.``
prefixes, and training ``.pth`` files holding ``state_dict``, ``model`` or an EMA
``teacher`` dict. Compiled or DDP-wrapped models add ``_orig_mod.`` / ``module.``.
Everything here reads one of those into a flat ``{key: tensor}`` dict and loads it
with a report of every mismatching key, never a silent partial load.
"""
import os
from typing import Dict, Iterable, Mapping, Optional

import torch
from torch import nn

from .user_errors import CheckpointError, CheckpointNotFoundError, UserError

WRAPPER_PREFIXES = ('module.', '_orig_mod.')
StateDict = Dict[str, torch.Tensor]


class CheckpointMismatchError(UserError, RuntimeError):
    """A checkpoint's keys or shapes do not fit the model."""


def _strip_wrappers(key: str) -> str:
    while key.startswith(WRAPPER_PREFIXES):  # each prefix ends at a '.'
        key = key.split('.', 1)[1]
    return key


def _pick_state_dict(obj: Mapping) -> Mapping:
    for name in ('state_dict', 'model'):
        if isinstance(obj.get(name), Mapping):
            return obj[name]
    if isinstance(obj.get('teacher'), Mapping):
        # EMA teacher of pretraining: backbone weights under 'backbone.'.
        return {
            k[len('backbone.'):] if k.startswith('backbone.') else k: v
            for k, v in obj['teacher'].items()
        }
    return obj


# Leading bytes of files that are often passed as a checkpoint by mistake.
_NOT_CHECKPOINTS = ((b'\x89PNG', 'a PNG image'), (b'\xff\xd8\xff', 'a JPEG image'),
                    (b'GIF8', 'a GIF image'), (b'%PDF', 'a PDF'),
                    (b'<', 'an HTML/XML page (a download page saved?)'))


def load_problem(path: str, err: Exception) -> str:
    """Why ``path`` did not load, without torch's advice to retry with
    ``weights_only=False`` (that runs any code the file holds; a checkpoint
    never needs it here: mmengine's objects are allowlisted)."""
    with open(path, 'rb') as f:
        head = f.read(8)
    for magic, what in _NOT_CHECKPOINTS:
        if head.startswith(magic):
            return f'it is {what}, not a checkpoint'
    text = str(err)
    if 'weights_only' in text or 'WeightsUnpickler' in text:
        reason = text.split('WeightsUnpickler error:', 1)[-1].strip()
        reason = reason.splitlines()[0] if reason and reason != text else ''
        return ('it holds objects a weights-only load refuses'
                + (f': {reason}' if reason else '')
                + '; resave its state_dict with torch.save')
    return f'{type(err).__name__}: {err}'


def read_checkpoint(path: str, lazy: bool = False) -> StateDict:
    """Read a checkpoint file into a flat state dict on the CPU.

    Args:
        path: ``.safetensors``, or a torch file (``.pth``/``.pt``/``.bin``/``.ckpt``)
            with a ``state_dict`` / ``model`` / ``teacher`` dict or a raw one.
        lazy: map the file instead of reading it (``safe_open`` /
            ``torch.load(mmap=True)``): a tensor's bytes are read when it is
            used, so taking a few tensors of a 20 GB file costs only those.
            A torch file in the legacy (non-zip) format is read whole.

    Returns:
        ``{key: tensor}`` with ``module.`` and ``_orig_mod.`` prefixes removed.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file cannot be parsed as a checkpoint.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointNotFoundError(
            f'Checkpoint file not found: {path!r}. Check the path, or download '
            'the official weights (see README "Model zoo").')
    try:
        if path.endswith('.safetensors'):
            raw = _read_safetensors(path, lazy)
        else:
            raw = _read_torch(path, lazy)
    except Exception as err:  # noqa: BLE001 - re-raised with the file named
        raise CheckpointError(
            f'Could not read checkpoint {path!r} ({load_problem(path, err)}'
            '). The file may be truncated or corrupt (re-download it), '
            'or not be a .safetensors/.pth checkpoint.') from err
    if not isinstance(raw, Mapping):
        raise CheckpointError(
            f'Checkpoint {path!r} holds a {type(raw).__name__}, expected a dict '
            'of tensors (or one with a state_dict/model/teacher entry).')
    state = _pick_state_dict(raw)
    return {
        _strip_wrappers(k): v
        for k, v in state.items() if isinstance(v, torch.Tensor)
    }


def _read_safetensors(path: str, lazy: bool) -> StateDict:
    if not lazy:
        from safetensors.torch import load_file
        return load_file(path, device='cpu')
    from safetensors import safe_open
    with safe_open(path, framework='pt', device='cpu') as f:
        # tensors of safe_open are views of a map of the file
        return {key: f.get_tensor(key) for key in f.keys()}


def _read_torch(path: str, lazy: bool):
    if lazy:
        try:
            return torch.load(path, map_location='cpu', weights_only=True,
                              mmap=True)
        except RuntimeError as err:
            if 'zipfile' not in str(err) and 'mmap' not in str(err):
                raise
    return torch.load(path, map_location='cpu', weights_only=True)


def select_prefix(state_dict: Mapping[str, torch.Tensor],
                  prefix: str) -> StateDict:
    """Keys under ``prefix`` with it removed; the whole dict if none has it.

    So ``select_prefix(sd, 'backbone.')`` takes the backbone out of a task
    checkpoint and leaves a bare pretrain checkpoint unchanged.
    """
    if not any(k.startswith(prefix) for k in state_dict):
        return dict(state_dict)
    return {
        k[len(prefix):]: v
        for k, v in state_dict.items() if k.startswith(prefix)
    }


def pretrained_load_message(path: str, raw: Mapping[str, torch.Tensor],
                            loaded: Mapping[str, torch.Tensor],
                            prefix: str, limit: int = 10) -> str:
    """What a ``Pretrained`` init loaded: the file, the tensor count and the
    keys of the file left out (those outside ``prefix`` when the file has
    keys under it, e.g. the head of a task checkpoint)."""
    selected = any(k.startswith(prefix) for k in raw)
    skipped = [k for k in raw if not k.startswith(prefix)] if selected else []
    text = (f'Pretrained: loaded {len(loaded)} tensors from {path}'
            + (f' (keys under {prefix!r})' if selected else ''))
    if not skipped:
        return text + '; every tensor of the file was used.'
    return (text + f'; {len(skipped)} key(s) of the file not used: '
            f'{_shown(skipped, limit)}.')


def _shown(keys: list, limit: int) -> str:
    """The first ``limit`` keys, then how many more there are."""
    more = f' ... and {len(keys) - limit} more' if len(keys) > limit else ''
    return ', '.join(keys[:limit]) + more


def _listing(title: str, keys: Iterable[str], limit: int = 20) -> str:
    keys = list(keys)
    return f'\n  {title} ({len(keys)}): {_shown(keys, limit)}' if keys else ''


def check_state_dict(module: nn.Module, state_dict: Mapping[str, torch.Tensor],
                     ignore_missing: Iterable[str] = ()) -> str:
    """Describe how ``state_dict`` mismatches ``module``; '' when it fits.

    Args:
        module: the target.
        state_dict: candidate weights.
        ignore_missing: module keys allowed to be absent from the checkpoint.
    """
    own = module.state_dict()
    ignore = set(ignore_missing)
    missing = [k for k in own if k not in state_dict and k not in ignore]
    unexpected = [k for k in state_dict if k not in own]
    wrong_shape = [
        f'{k} checkpoint {tuple(v.shape)} vs model {tuple(own[k].shape)}'
        for k, v in state_dict.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    return (_tokenizer_hint(missing, unexpected) +
            _listing('missing in checkpoint', missing) +
            _listing('unexpected in checkpoint', unexpected) +
            _listing('shape mismatch', wrong_shape))


def _is_tokenizer_key(key: str) -> bool:
    return key.startswith('tokenizer.') or '.tokenizer.' in key


def _tokenizer_hint(missing: Iterable[str], unexpected: Iterable[str]) -> str:
    """The 1K / 4K mix-up in one line, when the tokenizer keys tell it.

    The 4K backbone (``use_tokenizer=True``) has the windowed tokenizer
    stem (``tokenizer.local_pos_embed``, ``tokenizer.w_cls``,
    ``tokenizer.blocks.*``); 1K checkpoints and models have none of it.
    """
    lacking = [k for k in missing if _is_tokenizer_key(k)]
    extra = [k for k in unexpected if _is_tokenizer_key(k)]
    if lacking and not extra:
        return (
            f'\n  A 1K checkpoint for a 4K model: the model has the 4K '
            f'windowed tokenizer (use_tokenizer=True) and the checkpoint has '
            f'none of its {len(lacking)} keys ({lacking[0]}, ...). Load the '
            '4K weights (e.g. sapiens2_1b_4k_pretrain.safetensors) or use a '
            '1K config.')
    if extra and not lacking:
        return (
            f'\n  A 4K checkpoint for a 1K model: the checkpoint has the 4K '
            f'windowed tokenizer ({len(extra)} keys: {extra[0]}, ...) and the '
            'model has none (use_tokenizer=False). Use a 4K config '
            '(configs/*/sapiens2-1b-4k_*) or 1K weights.')
    return ''


def load_state_dict_checked(module: nn.Module,
                            state_dict: Mapping[str, torch.Tensor],
                            source: Optional[str] = None,
                            ignore_missing: Iterable[str] = ()) -> None:
    """``load_state_dict`` that refuses any key or shape mismatch.

    Tensors are cast to the dtype of the module's tensors by ``copy_`` (official
    files may store bf16); the bf16 RoPE ``periods`` buffer stays bf16.

    Raises:
        CheckpointMismatchError: listing missing, unexpected and mis-shaped keys.
    """
    require_fit(module, state_dict, source, ignore_missing)
    module.load_state_dict(state_dict, strict=not list(ignore_missing))


def require_fit(module: nn.Module, state_dict: Mapping[str, torch.Tensor],
                source: Optional[str] = None,
                ignore_missing: Iterable[str] = ()) -> None:
    """Refuse ``state_dict`` unless its keys and shapes fit ``module``.

    Only names and shapes are compared, so ``module`` may be on the meta
    device and ``state_dict`` a map of a file.

    Raises:
        CheckpointMismatchError: listing missing, unexpected and mis-shaped keys.
    """
    report = check_state_dict(module, state_dict, ignore_missing)
    if report:
        name = type(module).__name__
        raise CheckpointMismatchError(
            f'Checkpoint {source or "<state_dict>"} does not fit {name}:'
            f'{report}\nIs it for another model size or task? Check the arch '
            'and head settings of the config.')
