"""Write an output file under a temporary name and rename it when complete.

A converter that writes its output in place can destroy its own input (the
same file, a symlink or a hard link to it: a memory-mapped ``.safetensors``
truncated under its reader ends in a bus error) and leaves a half-written
file when interrupted. :func:`atomic_output` writes next to the target under
a hidden unique name and renames only a complete file, with the permissions
a plain ``open()`` would have given it (``safetensors`` and ``mkstemp``
create files ``0600``).
"""
import os
import os.path as osp
import tempfile
from contextlib import contextmanager
from typing import Iterator

from .work_dir import fsync_path

PART_SUFFIX = '.part'


def default_file_mode() -> int:
    """``0o666`` less the process umask: the mode ``open(path, 'w')`` gives."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def temp_beside(path: str) -> str:
    """Create and return an empty hidden file ``.<name>.<random>.part`` in
    ``path``'s folder (a name no tool reads or writes otherwise)."""
    folder = osp.dirname(osp.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f'.{osp.basename(path)}.',
                               suffix=PART_SUFFIX)
    os.close(fd)
    return tmp


def finish_file(tmp: str, path: str) -> str:
    """Give ``tmp`` :func:`default_file_mode`, flush it to the disk and
    rename it onto ``path``. Returns ``path``."""
    os.chmod(tmp, default_file_mode())
    fsync_path(tmp)
    os.replace(tmp, path)
    return path


def discard(tmp: str) -> None:
    """Remove a temporary file if it is there."""
    if osp.lexists(tmp):
        os.remove(tmp)


@contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """Yield a temporary path in ``path``'s folder (:func:`temp_beside`);
    rename it onto ``path`` when the block ends without an error
    (:func:`finish_file`), delete it otherwise.

    So ``path`` is always either the old file or the complete new one.
    """
    tmp = temp_beside(path)
    try:
        yield tmp
        finish_file(tmp, path)
    except BaseException:
        discard(tmp)
        raise
