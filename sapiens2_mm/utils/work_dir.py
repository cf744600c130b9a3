"""The checkpoints of a training work dir: which are complete, which to resume.

mmengine records the newest checkpoint as an absolute path in
``<work dir>/last_checkpoint`` and resumes from it blindly: from a moved work
dir the path is gone, from a copied one it points into the original, and a
truncated newest file stops the resume although an older complete one exists.
:func:`find_resume_checkpoint` resolves the record relative to the work dir and
falls back, newest first, to the next checkpoint that reads.
"""
import os
import os.path as osp
import re
from typing import List, Optional, Tuple

LAST_CHECKPOINT = 'last_checkpoint'
# iter_300.pth / epoch_12.pth as CheckpointHook names them (not best_*.pth, and
# not the hidden ``.iter_300.pth.part`` files of a save in progress); files, or
# folders of a sharded checkpoint.
CHECKPOINT_NAME = re.compile(r'^(iter|epoch)_(\d+)\.pth$')


def checkpoint_problem(path: str) -> Optional[str]:
    """Why ``path`` is not a complete torch checkpoint; None when it reads.

    Loads with ``mmap=True``: the zip directory and the pickled structure are
    read and checked, the tensor data is only mapped, so a 60 GB file costs a
    fraction of a second. A truncated or half-written file fails here. A
    folder is checked as a sharded checkpoint (its index, the extent of
    every shard file, :func:`~.sharded_checkpoint.sharded_checkpoint_problem`).
    """
    import torch

    from .checkpoint import load_problem
    from .safe_torch_load import allow_mmengine_checkpoint_globals
    from .sharded_checkpoint import sharded_checkpoint_problem
    allow_mmengine_checkpoint_globals()
    if osp.isdir(path):
        return sharded_checkpoint_problem(path)
    if not osp.isfile(path):
        return 'no such file'
    if osp.getsize(path) == 0:
        return 'empty file'
    try:
        obj = torch.load(path, map_location='cpu', mmap=True,
                         weights_only=True)
    except Exception as err:  # noqa: BLE001 - the reason is reported
        return load_problem(path, err).splitlines()[0][:200]
    if not isinstance(obj, dict) or 'state_dict' not in obj:
        return 'not an mmengine checkpoint (no state_dict)'
    return None


def read_last_checkpoint(work_dir: str) -> Optional[str]:
    """The path ``last_checkpoint`` records, resolved against ``work_dir``.

    A recorded path whose file name exists in ``work_dir`` resolves there (the
    work dir was moved or copied); otherwise the recorded path is kept (a
    CheckpointHook ``out_dir`` elsewhere).
    """
    record = osp.join(work_dir, LAST_CHECKPOINT)
    if not osp.isfile(record):
        return None
    with open(record) as f:
        recorded = f.read().strip()
    if not recorded:
        return None
    local = osp.join(work_dir, osp.basename(recorded))
    if osp.exists(local):  # a file, or the folder of a sharded checkpoint
        return local
    if not osp.isabs(recorded):
        return osp.join(work_dir, recorded)
    return recorded


def list_checkpoints(directory: str) -> List[str]:
    """``iter_N.pth`` / ``epoch_N.pth`` of ``directory`` (files or sharded
    checkpoint folders), newest first."""
    if not osp.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        match = CHECKPOINT_NAME.match(name)
        if match:
            found.append((int(match.group(2)), osp.join(directory, name)))
    return [path for _, path in sorted(found, reverse=True)]


def find_resume_checkpoint(work_dir: str) -> Tuple[Optional[str], List[str]]:
    """The newest complete checkpoint of ``work_dir`` and what was skipped.

    Candidates: the file ``last_checkpoint`` records (resolved by
    :func:`read_last_checkpoint`), then every ``iter_N.pth``/``epoch_N.pth``
    of the work dir and of the recorded file's directory, newest first.

    Returns:
        ``(path or None, notes)``: each note names a skipped candidate and why.
    """
    candidates = []
    recorded = read_last_checkpoint(work_dir)
    if recorded is not None:
        candidates.append(recorded)
        candidates += list_checkpoints(osp.dirname(recorded))
    candidates += list_checkpoints(work_dir)
    notes = []
    seen = set()
    for path in candidates:
        key = osp.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        problem = checkpoint_problem(path)
        if problem is None:
            return path, notes
        notes.append(f'skipped {path}: {problem}')
    return None, notes
