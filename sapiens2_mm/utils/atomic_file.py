"""Write a file under a temporary name and rename it when complete.

The one implementation of temporary-then-rename writing in the package. A
tool that writes its output in place can destroy its own input (the same
file, a symlink or a hard link to it: a memory-mapped ``.safetensors``
truncated under its reader ends in a bus error) and leaves a half-written
file when interrupted. Writing under :func:`temporary_path` and renaming
with :func:`finish_file` (or both through :func:`atomic_output`) means the
target is always either the old file or the complete new one.
"""
import os
import os.path as osp
import tempfile
from contextlib import contextmanager
from typing import IO, Iterator


def fsync_path(path: str) -> None:
    """Flush a file (or a directory entry table) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def default_file_mode() -> int:
    """``0o666`` less the process umask: the mode ``open(path, 'w')`` gives."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def temporary_path(path: str) -> str:
    """A new, empty temporary file next to ``path`` to write it under.

    The name, ``.<name>.<random>.partial<ext>``, is hidden, random and created
    exclusively (``tempfile.mkstemp``), so it is never an existing file, an
    input or another output (``a.partial.png`` is a possible photo name; the
    temporary of ``a.png`` must not be it). It keeps ``path``'s extension so
    encoders that choose the format by name (``cv2.imwrite``,
    ``cv2.VideoWriter``) work on it, and has the mode a plain ``open()``
    would give (umask applied; ``mkstemp`` creates ``0600``), which writers
    that truncate it keep. Rename it onto ``path`` when complete.
    """
    folder, name = osp.split(osp.abspath(path))
    ext = osp.splitext(name)[1]
    fd, tmp = tempfile.mkstemp(prefix=f'.{name}.', suffix=f'.partial{ext}',
                               dir=folder)
    os.close(fd)
    os.chmod(tmp, default_file_mode())
    return tmp


def finish_file(tmp: str, path: str, fsync: bool = True) -> str:
    """Give ``tmp`` :func:`default_file_mode` (``safetensors`` writes
    ``0600``), flush it to the disk (unless ``fsync=False``: inference
    outputs, many small files an index records) and rename it onto ``path``.

    Returns:
        ``path``.
    """
    os.chmod(tmp, default_file_mode())
    if fsync:
        fsync_path(tmp)
    os.replace(tmp, path)
    return path


def discard(tmp: str) -> None:
    """Remove a temporary file if it is there."""
    if osp.lexists(tmp):
        os.remove(tmp)


@contextmanager
def atomic_output(path: str, fsync: bool = True) -> Iterator[str]:
    """Yield a :func:`temporary_path` for ``path``; rename it onto ``path``
    when the block ends without an error (:func:`finish_file`), delete it
    otherwise."""
    tmp = temporary_path(path)
    try:
        yield tmp
        finish_file(tmp, path, fsync)
    except BaseException:
        discard(tmp)
        raise


@contextmanager
def atomic_open(path: str, mode: str = 'wb',
                fsync: bool = True) -> Iterator[IO]:
    """:func:`atomic_output` with the temporary file opened in ``mode``."""
    with atomic_output(path, fsync) as tmp:
        with open(tmp, mode) as f:
            yield f


def write_text_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` so readers see the old or the new content."""
    with atomic_open(path, 'w') as f:
        f.write(text)
