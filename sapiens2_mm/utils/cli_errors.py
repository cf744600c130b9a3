"""Report a command-line tool's user errors as one ``error:`` line.

train/test/infer print ``error: <message>`` and exit 1 for a wrong path, an
unreadable or mismatching checkpoint or a refused output; the converters and
exporters use :func:`user_errors_as_exit` to do the same instead of showing
a traceback. Programming errors (``TypeError``, ``KeyError`` ...) still
raise with their traceback.
"""
from contextlib import contextmanager
from typing import Iterator, Tuple

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
