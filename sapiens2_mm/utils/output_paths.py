"""Check where a tool will write before it does any work.

A conversion, export or plot that runs for minutes and then fails on an
unwritable path (or overwrites its own input) loses the work or the data.
Tools call these first, so the error comes before anything is read or built.
"""
import os
import os.path as osp
import tempfile
from typing import Iterable


class OutputPathError(ValueError):
    """An output path that cannot or must not be written."""


def same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` are one file (also through links), or resolve to one
    path when either does not exist yet."""
    if osp.exists(a) and osp.exists(b):
        return osp.samefile(a, b)
    return osp.realpath(a) == osp.realpath(b)


def check_writable_dir(path: str, what: str = 'output folder') -> str:
    """Create ``path`` if needed and prove a file can be written there.

    Raises:
        OutputPathError: naming the folder and the operating-system reason.
    """
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix='.write_test'):
            pass
    except OSError as err:
        raise OutputPathError(
            f'The {what} {path!r} is not writable ({err.strerror or err}). '
            'Choose another path.') from err
    return path


def check_output_file(path: str, inputs: Iterable[str] = (),
                      overwrite: bool = True, what: str = 'output') -> str:
    """Refuse an output file that is an input, exists (unless ``overwrite``)
    or lies in a folder that cannot be written.

    Args:
        path: the file the tool will write.
        inputs: files the tool reads; ``path`` may never be one of them.
        overwrite: whether an existing ``path`` may be replaced.
        what: how the message names the file.

    Returns:
        ``path``.

    Raises:
        OutputPathError: with what to do instead.
    """
    for source in inputs:
        if same_file(path, source):
            raise OutputPathError(
                f'The {what} {path!r} is the input file {source!r}; writing it '
                'would destroy the input. Give another output path.')
    if osp.isdir(path):
        raise OutputPathError(f'The {what} {path!r} is a folder; give a file '
                              'path.')
    if osp.exists(path) and not overwrite:
        raise OutputPathError(
            f'The {what} {path!r} exists; refusing to overwrite it. Pass '
            '--overwrite or choose another path.')
    if osp.exists(path) and not os.access(path, os.W_OK):
        raise OutputPathError(f'The {what} {path!r} exists and is read-only.')
    check_writable_dir(osp.dirname(osp.abspath(path)), f'folder of the {what}')
    return path
