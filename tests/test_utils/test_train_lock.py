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
