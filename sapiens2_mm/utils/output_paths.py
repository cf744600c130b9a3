"""Check where a tool will write before it does any work.

A conversion, export or plot that runs for minutes and then fails on an
unwritable path (or overwrites its own input) loses the work or the data.
Tools call these first, so the error comes before anything is read or built.
"""
import errno
import os
import os.path as osp
import re
import tempfile
from typing import Iterable

from .user_errors import NotAFolderError, NotWritableError, OutputPathError

__all__ = ['NotAFolderError', 'NotWritableError', 'OutputPathError']


def same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` are one file (also through links), or resolve to one
    path when either does not exist yet."""
    if osp.exists(a) and osp.exists(b):
        return osp.samefile(a, b)
    return osp.realpath(a) == osp.realpath(b)


def check_writable_dir(path: str, what: str = 'output folder',
                       hint: str = 'Choose another path.') -> str:
    """Create ``path`` if needed and prove a file can be written there (a
    uniquely named probe file, removed again).

    Args:
        path: the folder a tool will write into.
        what: how the message names it (``'work dir'``, ``'--show-dir'``).
        hint: what the message tells the user to do.

    Returns:
        ``path``.

    Raises:
        NotAFolderError: ``path`` is a file (also a ``NotADirectoryError``).
        NotWritableError: with the operating-system reason (also a
            ``PermissionError``).
    """
    if osp.exists(path) and not osp.isdir(path):
        raise NotAFolderError(
            f'The {what} {path!r} exists and is not a folder. {hint}')
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix='.write_test'):
            pass
    except OSError as err:
        raise NotWritableError(
            f'Cannot write to {what} {path!r}: not writable '
            f'({err.strerror or err}). {hint}') from err
    return path


def check_output_file(path: str, inputs: Iterable[str] = (),
                      overwrite: bool = True, what: str = 'output',
                      hint: str = 'Pass --overwrite or choose another path.'
                      ) -> str:
    """Refuse an output file that is an input, exists (unless ``overwrite``)
    or lies in a folder that cannot be written.

    Args:
        path: the file the tool will write.
        inputs: files the tool reads; ``path`` may never be one of them.
        overwrite: whether an existing ``path`` may be replaced.
        what: how the message names the file.
        hint: what the message for an existing file tells the user to do.

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
            f'The {what} {path!r} exists; refusing to overwrite it. {hint}')
    if osp.exists(path) and not os.access(path, os.W_OK):
        raise OutputPathError(f'The {what} {path!r} exists and is read-only.')
    check_writable_dir(osp.dirname(osp.abspath(path)), f'folder of the {what}')
    return path


def is_within(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or lies below it (both already resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_outside_folders(path: str, folders: Iterable[str],
                          what: str = 'output folder') -> str:
    """Refuse ``path`` when it is one of ``folders`` or inside one.

    Args:
        path: the folder a tool will write into.
        folders: folders it reads (a dataset's image folders).
        what: how the message names ``path`` (e.g. ``'--show-dir'``).

    Raises:
        OutputPathError: naming both folders.
    """
    real = osp.realpath(path)
    for folder in folders:
        if is_within(real, osp.realpath(folder)):
            raise OutputPathError(
                f'The {what} {path!r} is (inside) the input folder '
                f'{folder!r}; files written there could replace the inputs. '
                'Choose a folder outside the data.')
    return path


def rename_no_clobber(tmp: str, path: str, max_tries: int = 10000) -> str:
    """Give the finished file ``tmp`` the first name of ``path``,
    ``<root>_1<ext>``, ``<root>_2<ext>`` ... that does not exist, never
    replacing a file (``os.link`` fails on an existing name, so a file that
    appears meanwhile is not replaced either).

    Returns:
        The name given.
    """
    root, ext = osp.splitext(path)
    for index in range(max_tries):
        candidate = f'{root}_{index}{ext}' if index else path
        try:
            os.link(tmp, candidate)
        except FileExistsError:
            continue
        except OSError:  # no hard links here (some network/FAT folders)
            if osp.lexists(candidate):
                continue
            os.replace(tmp, candidate)
            return candidate
        os.remove(tmp)
        return candidate
    raise OutputPathError(f'No free name for {path!r} after {max_tries} '
                          'tries; choose an empty folder.')


# numpy's ndarray.tofile on a short fwrite: no errno, only the byte counts
_SHORT_WRITE = re.compile(r'\d+ requested and \d+ written')


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` means the disk (or the user's quota) is full:
    ``ENOSPC`` / ``EDQUOT``, or numpy's short write (``np.save`` reports
    "272000 requested and 122752 written" without an errno)."""
    if not isinstance(err, OSError):
        return False
    return err.errno in (errno.ENOSPC, errno.EDQUOT) or bool(
        _SHORT_WRITE.search(str(err)))
