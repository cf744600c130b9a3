"""Report a command-line tool's user errors as one ``error:`` line.

train/test/infer print ``error: <message>`` and exit 1 for a wrong path, an
unreadable or mismatching checkpoint or a refused output; the converters and
exporters use :func:`user_errors_as_exit` to do the same instead of showing
a traceback. Programming errors (``TypeError``, ``KeyError`` ...) still
raise with their traceback.
"""
import re
from contextlib import contextmanager
from typing import Iterator, Optional, Tuple

from .checkpoint import CheckpointMismatchError

# OSError covers missing files, permissions and full disks; ValueError the
# refusals (OutputPathError) and unreadable or wrong checkpoints.
USER_ERRORS = (OSError, ValueError, CheckpointMismatchError)


@contextmanager
def user_errors_as_exit(extra: Tuple[type, ...] = ()) -> Iterator[None]:
    """Turn :data:`USER_ERRORS` (and ``extra`` exception types) raised in
    the block into ``SystemExit('error: <message>')`` (exit status 1,
    message on stderr)."""
    try:
        yield
    except USER_ERRORS + tuple(extra) as err:
        raise SystemExit(f'error: {err}') from None


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
