"""Cluster signals: SIGTERM (scancel, time limit, pre-emption) stops a run
like Ctrl-C (lock released, resume command printed, exit 143); the printed
command of a distributed run is its launcher's; a job requeued on another
node resumes with --resume alone.

Signals are sent once the run is parked at a known iteration
(tests/configs/workflow/wait_for_sigint_hook.py writes a marker file after
that iteration's checkpoint), never after a fixed sleep.
"""
import json
import os
import os.path as osp
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

from sapiens2_mm.utils.train_lock import LOCK_NAME
from tests.conftest import subprocess_budget

from .workflow_utils import (
    DIST_TRAIN,
    REPO_DIR,
    TRAIN,
    WORKFLOW_CFG,
    free_port,
    load_tool,
    make_data,
    scalars,
)

train_tool = load_tool('train')


def hung_s() -> float:
    """An upper bound that only a hung run reaches (the waits end on
    events): 1800 s, or 50 interpreter starts on a busier machine
    (conftest.subprocess_budget)."""
    return max(1800.0, subprocess_budget(50))


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    return make_data(str(tmp_path_factory.mktemp('signals') / 'data'))


def _parked_config(tmp_path, marker):
    cfg = tmp_path / 'parked.py'
    cfg.write_text(
        f'_base_ = [{WORKFLOW_CFG!r}]\n'
        "custom_imports = dict(imports=['wait_for_sigint_hook'], "
        'allow_failed_imports=False)\n'
        "custom_hooks = [dict(type='WaitForSigintHook', at_iter=3, "
        f'marker={str(marker)!r})]\n'
        'train_cfg = dict(max_iters=1000)\n')
    return str(cfg)


def _env(data):
    return dict(os.environ, SAPIENS2_WORKFLOW_DATA=data, OMP_NUM_THREADS='1',
                PYTHON=sys.executable, PORT=str(free_port()),
                PYTHONPATH=os.pathsep.join([
                    osp.dirname(WORKFLOW_CFG), REPO_DIR,
                    os.environ.get('PYTHONPATH', '')]))


def _start_and_terminate(cmd, tmp_path, data, marker):
    """Start ``cmd`` in a session of its own, wait for ``marker``, send
    SIGTERM to the whole process group (as Slurm signals every process of
    a job step), wait for the end; (returncode, stderr)."""
    err_path = tmp_path / 'stderr.txt'
    with open(tmp_path / 'stdout.txt', 'w') as out, \
            open(err_path, 'w') as err:
        proc = subprocess.Popen(cmd, cwd=REPO_DIR, env=_env(data), stdout=out,
                                stderr=err, start_new_session=True)
        start = time.monotonic()
        while not osp.exists(marker):
            if proc.poll() is not None or time.monotonic() - start > hung_s():
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise AssertionError(f'never parked ({proc.returncode}):\n'
                                     f'{err_path.read_text()[-3000:]}')
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=hung_s())
        # the launcher may end before its workers: wait for the whole group
        start = time.monotonic()
        while time.monotonic() - start < hung_s():
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
    return proc.returncode, err_path.read_text()


def test_sigterm_then_resume_on_another_host(data, tmp_path, monkeypatch):
    """SIGTERM after iteration 3: exit 143, no traceback, lock released, the
    resume command printed. Then the job, requeued on another node (another
    host name; a lock left by a killed earlier run of the same Slurm job),
    runs with --resume alone and continues at iteration 4."""
    work = str(tmp_path / 'w')
    marker = tmp_path / 'parked'
    code, err = _start_and_terminate(
        [sys.executable, TRAIN, _parked_config(tmp_path, marker),
         '--work-dir', work], tmp_path, data, marker)
    assert code == 143, err[-3000:]
    assert 'Traceback' not in err
    assert 'Training stopped by SIGTERM at iteration' in err
    assert f'Last complete checkpoint: {osp.join(work, "iter_3.pth")}' in err
    command = shlex.split(err.split('Resume with:\n')[1].splitlines()[0])
    assert command[:2] == ['python', 'tools/train.py']
    assert command[-3:] == ['--work-dir', work, '--resume']
    assert not osp.exists(osp.join(work, LOCK_NAME))
    # a later incarnation of Slurm job 4242 on another node finds the lock
    # its killed first incarnation left behind (SIGKILL: no clean-up)
    with open(osp.join(work, LOCK_NAME), 'w') as f:
        json.dump(dict(pid=12345, host='node-a', started='then',
                       command='train.py', slurm_job_id='4242',
                       slurm_restart_count='0'), f)
    monkeypatch.setattr(socket, 'gethostname', lambda: 'node-b')
    monkeypatch.setenv('SLURM_JOB_ID', '4242')
    monkeypatch.setenv('SLURM_RESTART_COUNT', '1')
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', data)
    runner = train_tool.main([WORKFLOW_CFG, '--work-dir', work, '--resume'])
    assert runner.iter == 6
    steps = [e['step'] for e in scalars(work) if 'loss' in e]
    assert steps == [4, 5, 6]  # the log of the requeued run
    import glob
    log = open(sorted(glob.glob(osp.join(work, '*', '*.log')))[-1]).read()
    assert 'earlier run of this Slurm job 4242' in log
    assert 'resuming from ' + osp.join(work, 'iter_3.pth') in log
    assert not osp.exists(osp.join(work, LOCK_NAME))


@pytest.mark.slow
def test_sigterm_of_a_distributed_run_prints_its_launcher_command(
        data, tmp_path):
    """tools/dist_train.sh with 2 CPU ranks, SIGTERM to the job after
    iteration 3: rank 0 prints the dist_train.sh command, which resumes at
    iteration 4 and finishes the schedule."""
    work = str(tmp_path / 'w')
    marker = tmp_path / 'parked'
    _, err = _start_and_terminate(
        ['bash', DIST_TRAIN, _parked_config(tmp_path, marker), '2',
         '--work-dir', work], tmp_path, data, marker)
    assert 'Training stopped by SIGTERM at iteration' in err, err[-3000:]
    assert err.count('Resume with:') == 1  # rank 0 only
    command = err.split('Resume with:\n')[1].splitlines()[0]
    argv = shlex.split(command)
    assert argv[0] == 'tools/dist_train.sh' and argv[2] == '2'
    assert '--launcher' not in argv and argv[-1] == '--resume'
    assert not osp.exists(osp.join(work, LOCK_NAME))
    argv[1] = WORKFLOW_CFG  # the same schedule without the parking hook
    proc = subprocess.run(['bash', *argv], cwd=REPO_DIR, env=_env(data),
                          capture_output=True, text=True, timeout=hung_s())
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [e['step'] for e in scalars(work) if 'loss' in e]
    assert steps == [4, 5, 6]
    assert osp.isfile(osp.join(work, 'iter_6.pth'))


def test_resume_command_takes_the_launcher_form(monkeypatch):
    monkeypatch.chdir(REPO_DIR)  # the scripts are named from the cwd
    argv = ['configs/x.py', '--work-dir', 'old', '--launcher', 'pytorch',
            '--local-rank=3', '--cfg-options', 'a=1', '--resume', 'auto']
    single = train_tool.resume_command(argv[:1] + ['--amp'], 'w')
    assert single == 'python tools/train.py configs/x.py --amp --work-dir w ' \
        '--resume'
    one_node = train_tool.resume_command(
        argv, 'w', 'pytorch', dict(LOCAL_WORLD_SIZE='8',
                                   GROUP_WORLD_SIZE='1'))
    assert one_node == ('tools/dist_train.sh configs/x.py 8 --cfg-options '
                        'a=1 --work-dir w --resume')
    two = train_tool.resume_command(
        argv, 'w', 'pytorch', dict(LOCAL_WORLD_SIZE='8', GROUP_WORLD_SIZE='2',
                                   MASTER_ADDR='n0', MASTER_PORT='29511'))
    assert two.startswith('NNODES=2 NODE_RANK=0 MASTER_ADDR=n0 PORT=29511 '
                          'tools/dist_train.sh configs/x.py 8 ')
    assert two.endswith('# on each node, NODE_RANK 0..1')
    slurm = train_tool.resume_command(
        argv[:1] + ['--launcher', 'slurm'], 'w', 'slurm',
        dict(SLURM_NTASKS='16', SLURM_TASKS_PER_NODE='8(x2)',
             SLURM_JOB_PARTITION='gpu', SLURM_JOB_NAME='pose'))
    assert slurm == ('GPUS=16 GPUS_PER_NODE=8 tools/slurm_train.sh gpu pose '
                     'configs/x.py --work-dir w --resume')


def test_slurm_train_sh_expands_no_empty_array_under_set_u(tmp_path):
    """bash < 4.4 reports "${A[@]}" of an empty array as an unbound variable
    under set -u (tools/slurm_train.sh without a WORK_DIR failed on bash
    4.2). Every array expansion of the launch scripts is guarded; the
    script runs with a stand-in srun (also under bash 4.2 when
    SAPIENS2_BASH42 names one; docs/train_test.md)."""
    import glob
    import re
    for script in glob.glob(osp.join(REPO_DIR, 'tools', '*.sh')):
        text = '\n'.join(line for line in open(script).read().splitlines()
                         if not line.lstrip().startswith('#'))
        for name in set(re.findall(r'"\$\{(\w+)\[@\]\}"', text)):
            assert text.count(f'"${{{name}[@]}}"') == text.count(
                f'${{{name}[@]+"${{{name}[@]}}"}}'), (script, name)
    srun = tmp_path / 'srun'
    srun.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    srun.chmod(0o755)
    env = dict(os.environ, PATH=f'{tmp_path}{os.pathsep}'
               f'{os.environ.get("PATH", "")}')
    shells = ['bash'] + [b for b in [os.environ.get('SAPIENS2_BASH42')] if b]
    for shell in shells:
        for work_dir in ([], ['work_dirs/x']):
            proc = subprocess.run(
                [shell, osp.join(REPO_DIR, 'tools', 'slurm_train.sh'), 'p',
                 'j', 'cfg.py', *work_dir, '--amp'], capture_output=True,
                text=True, timeout=hung_s(), env=env)
            assert proc.returncode == 0, (shell, proc.stderr)
            args = proc.stdout.split()
            at = args.index('cfg.py')
            expected = ['--work-dir', *work_dir] if work_dir else []
            assert args[at + 1:] == [*expected, '--launcher', 'slurm',
                                     '--amp'], (shell, args)
