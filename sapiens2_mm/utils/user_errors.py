"""Errors a user can fix: each carries its one-line message (what was wrong,
the value, what to do).

A command-line tool ends on one of them with ``error: <message>`` and exit
status 1 (:func:`~sapiens2_mm.utils.cli_errors.user_errors_as_exit`): the
tools map these types and never read message text. Each type also derives
from the built-in exception a Python caller would expect (a missing file is
a ``FileNotFoundError``, a bad value a ``ValueError``), so ``except
ValueError`` around an API call keeps working. Any other exception is a
programming error (or an upstream library's) and keeps its traceback.

An error of one frame in a run (a mask of another size, a photo too thin to
letterbox) is not one of these: the run skips and lists that frame
(``ValueError: <message>``) and goes on; it ends no tool.
"""


class UserError(Exception):
    """Something the user gave cannot be used; the message says what to
    do."""


class ConfigError(UserError, ValueError):
    """A config that cannot be used: not valid Python, an unknown type, no
    task, a missing part (test pipeline, metainfo), a bad value."""


class ConfigNotFoundError(ConfigError, FileNotFoundError):
    """No config file at the given path."""


class CheckpointError(UserError, ValueError):
    """A checkpoint that cannot be used: unreadable, not a checkpoint, or of
    another task."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """No checkpoint file at the given path."""


class OptionError(UserError, ValueError):
    """An option value that is not allowed (a device, a batch size, a task
    option, two options that exclude each other)."""


class InputError(UserError, ValueError):
    """An input that cannot be used: an array of the wrong shape, a box or
    mask file that cannot be read, a photo the task cannot process."""


class InputNotFoundError(InputError, FileNotFoundError):
    """An input path (image, folder, video, box file, mask folder) that does
    not exist or is not what it must be."""


class InputNotAFolderError(InputError, NotADirectoryError):
    """An input path that must be a folder (a mask folder) and is not."""


class OutputPathError(UserError, ValueError):
    """An output path that cannot or must not be written."""


class NotAFolderError(OutputPathError, NotADirectoryError):
    """An output folder that exists as a file."""


class NotWritableError(OutputPathError, PermissionError):
    """An output folder where no file can be written."""


class OutputExistsError(OutputPathError, FileExistsError):
    """Writing would replace or mix with what is there (an input, another
    frame's output, an earlier run of other settings)."""
