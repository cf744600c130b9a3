"""WorkDirLock: one training per work dir, stale locks taken over."""
import json
import os
import socket
import subprocess
import sys

import pytest

from sapiens2_mm.utils.train_lock import LOCK_NAME, WorkDirLock, WorkDirLockedError


def _write_lock(work_dir, pid, host=None):
    with open(os.path.join(work_dir, LOCK_NAME), 'w') as f:
        json.dump(dict(pid=pid, host=host or socket.gethostname(),
                       started='then', command='train.py x'), f)


def _dead_pid():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    return proc.pid


def test_second_lock_refused_until_released(tmp_path):
    first = WorkDirLock(str(tmp_path))
    assert first.acquire() is None
    _write_lock(str(tmp_path), os.getppid())  # a live process of this host
    with pytest.raises(WorkDirLockedError) as err:
        WorkDirLock(str(tmp_path)).acquire()
    text = str(err.value)
    assert f'pid {os.getppid()}' in text and '--ignore-lock' in text
    note = WorkDirLock(str(tmp_path)).acquire(force=True)
    assert 'taken over' in note


def test_stale_lock_of_dead_process_taken_over(tmp_path):
    _write_lock(str(tmp_path), _dead_pid())
    lock = WorkDirLock(str(tmp_path))
    assert 'stale' in lock.acquire()
    with open(tmp_path / LOCK_NAME) as f:
        assert json.load(f)['pid'] == os.getpid()
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_lock_of_other_host_refused(tmp_path):
    _write_lock(str(tmp_path), _dead_pid(), host='another-machine')
    with pytest.raises(WorkDirLockedError, match='another-machine'):
        WorkDirLock(str(tmp_path)).acquire()


def test_lock_without_heartbeat_is_stale_even_from_another_host(tmp_path):
    """A run killed on another node (no clean-up) left its lock: after ten
    missed heartbeats it no longer blocks (a live holder touches the lock
    every minute; the age is read on the file system's clock)."""
    from sapiens2_mm.utils import lock_liveness
    _write_lock(str(tmp_path), 4321, host='another-machine')
    path = str(tmp_path / LOCK_NAME)
    now = lock_liveness.file_system_now(str(tmp_path))
    old = now - lock_liveness.STALE_AFTER_S - 5
    os.utime(path, (old, old))
    lock = WorkDirLock(str(tmp_path))
    note = lock.acquire()
    assert 'another-machine' in note and 'no heartbeat for' in note
    lock.release()
    # one heartbeat short of stale: still a live run
    _write_lock(str(tmp_path), 4321, host='another-machine')
    recent = now - lock_liveness.STALE_AFTER_S + 60
    os.utime(path, (recent, recent))
    with pytest.raises(WorkDirLockedError, match='another-machine'):
        WorkDirLock(str(tmp_path)).acquire()


def test_lock_of_an_earlier_run_of_this_slurm_job_is_stale(tmp_path,
                                                           monkeypatch):
    """A requeued Slurm job keeps its job id and runs once at a time: the
    lock its killed first run left on another node is taken over at once."""
    with open(tmp_path / LOCK_NAME, 'w') as f:
        json.dump(dict(pid=4321, host='node-a', started='then',
                       command='train.py', slurm_job_id='77',
                       slurm_restart_count='0'), f)
    monkeypatch.setenv('SLURM_JOB_ID', '78')  # another job: blocked
    with pytest.raises(WorkDirLockedError, match='node-a'):
        WorkDirLock(str(tmp_path)).acquire()
    monkeypatch.setenv('SLURM_JOB_ID', '77')
    monkeypatch.setenv('SLURM_RESTART_COUNT', '1')
    lock = WorkDirLock(str(tmp_path))
    note = lock.acquire()
    assert 'earlier run of this Slurm job 77 (restart 0' in note
    with open(tmp_path / LOCK_NAME) as f:
        mine = json.load(f)
    assert (mine['slurm_job_id'], mine['slurm_restart_count']) == ('77', '1')
    lock.release()


def test_a_held_lock_is_touched_by_its_heartbeat(tmp_path):
    import time

    from sapiens2_mm.utils.lock_liveness import Heartbeat
    path = tmp_path / LOCK_NAME
    path.write_text('{}')
    os.utime(path, (1000.0, 1000.0))
    beat = Heartbeat(str(path), interval=0.05).start()
    start = time.monotonic()
    while os.stat(path).st_mtime == 1000.0:  # waits for the event
        assert time.monotonic() - start < 600, 'never touched'
        time.sleep(0.05)
    beat.stop()
    path.unlink()  # a removed lock ends the thread too
