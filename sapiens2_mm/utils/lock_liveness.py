"""Whether the holder of a work-dir lock can still be running.

A lock whose run ended cleanly is gone (the run removes it, also on Ctrl-C
and SIGTERM). A lock left behind by a run that was killed (SIGKILL, a node
that failed, a Slurm job pre-empted past its grace time) must not block the
job that continues it, possibly on another node; a live run on another host
must still block. The holder is gone when:

* it ran on this host and its process no longer exists;
* it was an earlier incarnation of this Slurm job (a requeued job keeps its
  ``SLURM_JOB_ID``, and Slurm runs one incarnation at a time);
* its heartbeat stopped: the holder touches the lock file every
  :data:`HEARTBEAT_S` seconds (:class:`Heartbeat`), and a lock untouched for
  :data:`STALE_AFTER_S` seconds is stale. Ages are measured on the file
  system's clock (a probe file touched now), so clocks of different hosts
  sharing the work dir need not agree.
"""
import os
import os.path as osp
import socket
import tempfile
import threading
from typing import Optional

HEARTBEAT_S = 60.0
STALE_AFTER_S = 600.0  # ten missed heartbeats
SLURM_JOB = 'SLURM_JOB_ID'


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def file_system_now(folder: str) -> float:
    """The current time on the clock that stamps files in ``folder``."""
    fd, probe = tempfile.mkstemp(prefix='.clock_probe_', dir=folder)
    try:
        os.close(fd)
        return os.stat(probe).st_mtime
    finally:
        os.remove(probe)


def holder_info() -> dict:
    """What a lock records about its holder beyond pid / host / command."""
    job = os.environ.get(SLURM_JOB)
    return {} if not job else dict(
        slurm_job_id=job,
        slurm_restart_count=os.environ.get('SLURM_RESTART_COUNT', '0'))


def why_gone(info: dict, path: str) -> Optional[str]:
    """Why the holder recorded in ``info`` (the lock at ``path``) cannot be
    running any more, or None if it may be."""
    pid = info.get('pid')
    if info.get('host') == socket.gethostname() and isinstance(pid, int) and \
            (pid == os.getpid() or not _process_alive(pid)):
        return 'that process is gone'
    job = os.environ.get(SLURM_JOB)
    if job and info.get('slurm_job_id') == job:
        return (f'an earlier run of this Slurm job {job} (restart '
                f'{info.get("slurm_restart_count", "?")}; the job was '
                'requeued)')
    try:
        age = file_system_now(osp.dirname(path)) - os.stat(path).st_mtime
    except OSError:
        return None
    if age > STALE_AFTER_S:
        return (f'no heartbeat for {age:.0f} s (a live run touches its lock '
                f'every {HEARTBEAT_S:.0f} s)')
    return None


class Heartbeat:
    """Touch ``path`` every :data:`HEARTBEAT_S` seconds until stopped."""

    def __init__(self, path: str, interval: float = HEARTBEAT_S):
        self.path = path
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='train-lock-heartbeat')

    def start(self) -> 'Heartbeat':
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                os.utime(self.path)
            except OSError:  # removed (released or taken over): stop
                return

    def stop(self) -> None:
        self._stop.set()
