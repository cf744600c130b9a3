"""Convert official Sapiens2 checkpoints to mmengine ``.pth`` files and back.

Every output is written under a temporary name and renamed when complete
(:func:`~sapiens2_mm.utils.atomic_file.atomic_output`), and an output that is
(or resolves to) one of the inputs is refused, ``overwrite`` or not.
"""
import hashlib
import os.path as osp
from typing import Iterable, Mapping, Optional

import torch

from ..version import __version__
from .atomic_file import atomic_output, discard, finish_file, temporary_path
from .checkpoint import read_checkpoint
from .official_keys import detect_task, official_to_package, package_to_official
from .output_paths import OutputPathError, check_output_file, same_file
from .user_errors import (
    CheckpointError,
    CheckpointNotFoundError,
    OptionError,
    OutputExistsError,
)

TRAINING_STATE_KEYS = ('optimizer', 'message_hub', 'param_schedulers', 'ema_state_dict')
# Keys only a Sapiens2Pretrainer checkpoint has (its EMA teacher).
PRETRAINER_PREFIX = 'teacher.'


def _check_output(dst: str, overwrite: bool, inputs: Iterable[str] = ()) -> None:
    """Refuse ``dst`` when it is an input (always), exists (unless
    ``overwrite``) or cannot be written.

    Raises:
        OutputPathError: ``dst`` is (a link to) an input, a folder, read-only
            or in a folder that cannot be written.
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
    """
    check_output_file(dst, inputs, overwrite=True)
    if osp.exists(dst) and not overwrite:
        raise OutputExistsError(
            f'{dst!r} exists; refusing to overwrite it. Pass --overwrite or '
            'choose another output path.')


def load_mmengine_file(src: str) -> Mapping:
    """``torch.load`` (weights only, to the CPU) of a checkpoint ``.pth``.

    Raises:
        FileNotFoundError / ValueError: ``src`` is missing, unreadable or not
            a dict.
    """
    if not osp.isfile(src):
        raise CheckpointNotFoundError(f'Checkpoint {src!r} does not exist.')
    try:
        checkpoint = torch.load(src, map_location='cpu', weights_only=True)
    except Exception as err:  # noqa: BLE001 - re-raised with the file named
        raise CheckpointError(
            f'Could not read checkpoint {src!r} ({type(err).__name__}: '
            f'{err}).') from err
    if not isinstance(checkpoint, Mapping):
        raise CheckpointError(f'{src!r} does not hold a checkpoint dict.')
    return checkpoint


def _refuse_pretrainer(state: Mapping[str, torch.Tensor], src: str) -> None:
    """A training checkpoint of pretraining holds the student, the EMA
    teacher, the decoder and the heads; converting it whole gives a file
    whose backbone an ``init_cfg`` reads as the student, not the teacher."""
    if any(key.startswith(PRETRAINER_PREFIX) for key in state):
        raise CheckpointError(
            f'{src!r} is a pretraining checkpoint (Sapiens2Pretrainer: '
            'student, EMA teacher, decoder and heads), not a task model. '
            'Export its backbone with: python '
            f'tools/model_converters/export_pretrain.py {src} '
            'OUT.safetensors (the teacher, as the official weights; '
            '--which student for the student).')


def resolve_task(state: Mapping[str, torch.Tensor], task: Optional[str],
                 src: str) -> str:
    """The task of ``state``: detected, or ``task`` when it agrees.

    Raises:
        ValueError: ``task`` names another task than the checkpoint's head
            (e.g. ``pose`` for a seg checkpoint), or no task is given and the
            layout is unknown.
    """
    try:
        detected = detect_task(state)
    except ValueError:
        if task is None:
            raise
        return task  # an unknown layout converted as the task asked for
    if task is not None and task != detected:
        raise CheckpointError(
            f'--task {task} was given, but {src!r} is a {detected} '
            f'checkpoint (its keys are those of a {detected} model). Leave '
            '--task out to convert it as what it is, or give the '
            f'{task} checkpoint.')
    return detected


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
    _check_output(dst, overwrite, [src])
    state = read_checkpoint(src)
    task = resolve_task(state, task, src)
    state = official_to_package(state, task)
    meta = dict(sapiens2_mm_version=__version__, task=task,
                converted_from=osp.basename(src))
    with atomic_output(dst) as tmp, open(tmp, 'wb') as f:
        # to a file object: the zip's root folder is then 'archive', not the
        # temporary name (same bytes for the same weights)
        torch.save(dict(meta=meta, state_dict=state), f)
    return task


def mmengine_to_official(src: str, dst: str, task: Optional[str] = None,
                         overwrite: bool = False) -> str:
    """mmengine checkpoint (ours) -> official-layout ``.safetensors``.

    Training state (optimizer, schedulers, message hub) is dropped; tensor
    dtypes are kept (the RoPE ``periods`` stay bfloat16).

    Returns:
        The task that was converted.

    Raises:
        ValueError: ``src`` is a pretraining checkpoint (use
            :func:`~sapiens2_mm.utils.pretrain_export.export_pretrain`), or
            ``task`` disagrees with its head.
    """
    if not dst.endswith('.safetensors'):
        raise OutputPathError(f'Output must be a .safetensors file, got {dst!r}.')
    _check_output(dst, overwrite, [src])
    return _write_official(read_checkpoint(src), dst, task, src)


def _write_official(state: Mapping[str, torch.Tensor], dst: str,
                    task: Optional[str], src: str) -> str:
    """``state`` (this package's key names) as an official ``.safetensors``
    at ``dst``; returns the task."""
    from safetensors.torch import save_file
    _refuse_pretrainer(state, src)
    task = resolve_task(state, task, src)
    state = package_to_official(state, task)
    with atomic_output(dst) as tmp:
        save_file({k: v.contiguous() for k, v in state.items()}, tmp,
                  metadata=dict(format='pt', task=task))
    return task


def consolidate_sharded(src: str, dst: str, task: Optional[str] = None,
                        with_optimizer: bool = False,
                        overwrite: bool = False) -> str:
    """A sharded checkpoint folder (FSDP ``state_dict_cfg='sharded'``) as
    one file, read in this process.

    Args:
        src: the folder (e.g. ``work_dirs/x/iter_300.pth``).
        dst: ``.pth``: an mmengine checkpoint as ``state_dict_cfg='full'``
            writes it (weights, ``meta``, ``message_hub``, schedulers; the
            optimizer state with ``with_optimizer``); ``.safetensors``: the
            weights in the official layout (as sapiens2_mm_to_official.py).
        task: for ``.safetensors``, as in :func:`mmengine_to_official`.
        with_optimizer: keep the optimizer state (``.pth`` only).
        overwrite: replace an existing ``dst``.

    Returns:
        What was written, in words.
    """
    from .sharded_checkpoint import read_sharded_checkpoint
    if not dst.endswith(('.pth', '.safetensors')):
        raise OutputPathError(
            f'Output must be a .pth (mmengine checkpoint) or a .safetensors '
            f'(official layout) file, got {dst!r}.')
    official = dst.endswith('.safetensors')
    if official and with_optimizer:
        raise OptionError('--with-optimizer needs a .pth output; the '
                         'official layout holds the weights only.')
    _check_output(dst, overwrite, [src])
    if osp.realpath(dst).startswith(osp.realpath(src) + osp.sep):
        raise OutputPathError(
            f'{dst!r} lies inside the checkpoint folder {src!r}; write the '
            'consolidated file elsewhere.')
    checkpoint = read_sharded_checkpoint(src, with_optimizer=with_optimizer)
    if official:
        task = _write_official(checkpoint['state_dict'], dst, task, src)
        return f'{task} weights in the official layout'
    with atomic_output(dst) as tmp, open(tmp, 'wb') as f:
        torch.save(checkpoint, f)
    return 'an mmengine checkpoint' + (
        ' with the optimizer state' if with_optimizer else ' (weights)')


def publish_checkpoint(src: str, dst: str) -> str:
    """Strip training state, save, and append the sha256 prefix to the name.

    Args:
        src: a training checkpoint (``.pth``) written by mmengine.
        dst: output path, e.g. ``sapiens2-1b_pose.pth``; written as
            ``sapiens2-1b_pose-<sha256[:8]>.pth``.

    Returns:
        The final path.

    Raises:
        FileNotFoundError / ValueError: ``src`` is missing, unreadable or not
            an mmengine checkpoint.
        OutputPathError: the output would be ``src`` itself.
    """
    if not osp.isfile(src):
        raise CheckpointNotFoundError(f'Checkpoint {src!r} does not exist.')
    stem, ext = osp.splitext(dst)
    ext = ext or '.pth'
    check_output_file(dst, [src], what='published checkpoint')
    checkpoint = load_mmengine_file(src)
    if 'state_dict' not in checkpoint:
        raise CheckpointError(
            f'{src!r} is not an mmengine checkpoint (no "state_dict" entry).')
    for key in TRAINING_STATE_KEYS:
        checkpoint.pop(key, None)
    tmp = temporary_path(stem + ext)
    try:
        with open(tmp, 'wb') as f:
            # a file object: the zip's root folder is 'archive' whatever the
            # temporary name, so the hash depends on the weights only
            torch.save(checkpoint, f)
        with open(tmp, 'rb') as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        final = f'{stem}-{digest[:8]}{ext}'
        if same_file(final, src):
            raise OutputPathError(
                f'The published name {final!r} is the input {src!r} (it is '
                'published already); nothing to do.')
        return finish_file(tmp, final)
    finally:
        discard(tmp)
