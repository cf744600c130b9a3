"""Report a command-line tool's user errors as one ``error:`` line.

Every tool (train, test, infer, the converters and exporters) runs its work
inside :func:`user_errors_as_exit`: a :class:`~sapiens2_mm.utils.user_errors.
UserError` (a wrong path, option or input, an unreadable or mismatching
checkpoint, a refused output, a config that cannot run) or an ``OSError``
(the file system: a missing file, no permission, a full disk) ends it with
``error: <message>`` and exit status 1. The tools map these types and never
read message text. Programming errors (``TypeError``, ``KeyError`` ...) keep
their traceback.

mmengine reports a ``type=`` that no registry has as a ``KeyError`` whose
text names the type: :func:`unknown_types_as_config_errors` turns it into a
:class:`UnknownTypeError` where configs are built (the one place its text is
read).
"""
import re
from contextlib import contextmanager
from typing import Iterator, Optional, Tuple

from .user_errors import ConfigError, UserError

#: What ends a tool with one ``error:`` line.
USER_ERRORS = (UserError, OSError)


class UnknownTypeError(ConfigError):
    """A ``type=`` in a config that no registry has (misspelled, or an
    upstream type without its scope)."""


@contextmanager
def user_errors_as_exit(extra: Tuple[type, ...] = ()) -> Iterator[None]:
    """Turn :data:`USER_ERRORS` (and ``extra`` exception types) raised in
    the block into ``SystemExit('error: <message>')`` (exit status 1,
    message on stderr)."""
    try:
        yield
    except USER_ERRORS + tuple(extra) as err:
        raise SystemExit(f'error: {err}') from None


@contextmanager
def unknown_types_as_config_errors(config: str) -> Iterator[None]:
    """Turn mmengine's ``KeyError`` for a type no registry has, raised while
    the block builds from the config file ``config``, into an
    :class:`UnknownTypeError` naming the type and the file; other
    ``KeyError`` s are raised as they are."""
    try:
        yield
    except KeyError as err:
        message = unknown_type_message(err)
        if message is None:
            raise
        raise UnknownTypeError(f'{message} ({config})') from None


_NOT_IN_REGISTRY = re.compile(r'(\S+) is not in the (\S+) registry')


def unknown_type_message(err: BaseException) -> Optional[str]:
    """One line for mmengine's ``KeyError`` of a type no registry has (a
    misspelled ``type=`` in a config), else None (a programming error)."""
    if not isinstance(err, KeyError) or not err.args:
        return None
    found = _NOT_IN_REGISTRY.search(str(err.args[0]))
    if found is None:
        return None
    return (f'Unknown type {found.group(1)}: it is not in the '
            f'{found.group(2)} registry. Check the spelling of that type= in '
            'the config (upstream types carry their scope, e.g. '
            '"mmpose.TopdownPoseEstimator").')
