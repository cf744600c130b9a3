"""One training per work dir: a lock file recording who trains there.

Two runs in one work dir overwrite each other's checkpoints, ``last_checkpoint``
and config copy. ``tools/train.py`` takes ``<work dir>/.train.lock`` (created
with ``O_EXCL``, so two starts cannot both win) and removes it when it exits.
``tools/infer.py`` takes ``<output>/.inference.lock`` the same way
(:data:`INFERENCE_LOCK`): two runs into one output folder would do frames
twice and interleave their index lines.
The file records pid, host, start time, command (and the Slurm job); a lock
whose holder cannot be running any more is stale and taken over with a note:
its process is gone from this host, it was an earlier run of this (requeued)
Slurm job, or its heartbeat stopped (:mod:`.lock_liveness`; a holder touches
the lock every minute). A live run on another host still blocks: the message
says how to override it.
"""
import json
import os
import os.path as osp
import socket
import sys
import time
from typing import Optional

from .lock_liveness import Heartbeat, holder_info, why_gone
from .user_errors import UserError

LOCK_NAME = '.train.lock'
#: :class:`WorkDirLock` arguments of ``tools/infer.py``'s output folder lock.
INFERENCE_LOCK = dict(
    lock_name='.inference.lock', job='tools/infer.py run',
    place='output folder',
    why='Two runs into one folder do frames twice and mix their index lines.',
    what_to_do='Wait for it to finish, or pass another --output. If that run '
    'is gone (e.g. it ran on another machine), delete {path}.')


class WorkDirLockedError(UserError, RuntimeError):
    """Another training holds the work dir."""


class WorkDirLock:
    """``<work_dir>/.train.lock`` held by this process.

    Args:
        work_dir: the training work dir (must exist).
        lock_name / job / place / why / what_to_do: the lock file's name and
            how the refusal names the holder's job, the folder, why two runs
            must not share it and what to do (``{path}``: the lock file);
            the defaults are the training's, :data:`INFERENCE_LOCK` gives
            the inference run's.
    """

    def __init__(self, work_dir: str, lock_name: str = LOCK_NAME,
                 job: str = 'training', place: str = 'work dir',
                 why: str = 'Two runs in one work dir overwrite each '
                 'other\'s checkpoints and config copy.',
                 what_to_do: str = 'Wait for it to finish, or train into '
                 'another --work-dir. If that run is gone (e.g. it ran on '
                 'another machine), pass --ignore-lock or delete {path}.'):
        self.path = osp.join(work_dir, lock_name)
        self.held = False
        self._heartbeat: Optional[Heartbeat] = None
        self.job, self.place, self.why = job, place, why
        self.what_to_do = what_to_do

    def _info(self) -> dict:
        return dict(pid=os.getpid(), host=socket.gethostname(),
                    started=time.strftime('%Y-%m-%d %H:%M:%S %Z'),
                    command=' '.join(sys.argv), **holder_info())

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, 'w') as f:
            json.dump(self._info(), f)
        self.held = True
        self._heartbeat = Heartbeat(self.path).start()
        return True

    def holder(self) -> Optional[dict]:
        """The recorded holder; None if the lock is gone or unreadable."""
        try:
            with open(self.path) as f:
                info = json.load(f)
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None

    def acquire(self, force: bool = False) -> Optional[str]:
        """Take the lock.

        Args:
            force: take it over even when another live process holds it.

        Returns:
            A note when a stale or forced lock was replaced, else None.

        Raises:
            WorkDirLockedError: held by a live process (or one on another host
                that cannot be checked) and ``force`` is False.
        """
        if self._create():
            return None
        info = self.holder()
        work_dir = osp.dirname(self.path)
        gone = None
        if info is None:
            who = f'an unreadable lock file {self.path}'
            stale = False
        else:
            who = (f'pid {info.get("pid")} on host {info.get("host")} '
                   f'(started {info.get("started")}: {info.get("command")})')
            gone = why_gone(info, self.path)
            stale = gone is not None
        if not (stale or force):
            raise WorkDirLockedError(
                f'The {self.place} {work_dir} is in use by another '
                f'{self.job}: {who}. {self.why} '
                + self.what_to_do.format(path=self.path))
        os.remove(self.path)
        if not self._create():
            raise WorkDirLockedError(
                f'Another {self.job} took the lock {self.path} just now.')
        reason = f'stale ({gone})' if stale else 'taken over (--ignore-lock)'
        return f'Lock of {who} was {reason}.'

    def release(self) -> None:
        """Remove the lock if this process holds it."""
        if not self.held:
            return
        if self._heartbeat is not None:
            self._heartbeat.stop()
        info = self.holder()
        if info is not None and info.get('pid') == os.getpid():
            os.remove(self.path)
        self.held = False
