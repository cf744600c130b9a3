"""Helpers of the tool tests: synthetic data, CLI runs, reading results."""
import glob
import json
import os
import os.path as osp
import socket
import subprocess
import sys
from typing import Optional

from tests.conftest import (
    REPO_DIR,
    TESTS_DIR,
    load_tool,  # noqa: F401 - moved to conftest, still importable here
    subprocess_budget,
)

WORKFLOW_CFG = osp.join(TESTS_DIR, 'configs', 'workflow', 'tiny_seg_workflow.py')
TRAIN = osp.join(REPO_DIR, 'tools', 'train.py')
TEST = osp.join(REPO_DIR, 'tools', 'test.py')
DIST_TRAIN = osp.join(REPO_DIR, 'tools', 'dist_train.sh')
DIST_TEST = osp.join(REPO_DIR, 'tools', 'dist_test.sh')


def make_data(out_dir: str) -> str:
    sys.path.insert(0, osp.dirname(WORKFLOW_CFG))
    try:
        from make_tiny_seg_data import make_tiny_seg_data
    finally:
        sys.path.pop(0)
    # 5 val images: a 2-process sampler pads one, so duplicates would show
    return make_tiny_seg_data(out_dir, num_train=8, num_val=5)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def run_tool(args, data_root, nproc=1, timeout: Optional[float] = None,
             check=True):
    """Run a tool as a subprocess.

    ``args[0]`` is a Python script (run with torchrun when ``nproc > 1``) or a
    ``.sh`` launcher (run with bash, using this interpreter and a free port).
    ``timeout`` defaults to 40 interpreter starts (conftest.subprocess_budget:
    a tiny run takes a few).
    """
    env = dict(os.environ, SAPIENS2_WORKFLOW_DATA=data_root,
               OMP_NUM_THREADS='1', MKL_NUM_THREADS='1',
               PYTHON=sys.executable, PORT=str(free_port()))
    env.pop('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', None)
    if args[0].endswith('.sh'):
        cmd = ['bash', *args]
    elif nproc > 1:
        cmd = [sys.executable, '-m', 'torch.distributed.run',
               f'--nproc_per_node={nproc}', f'--master_port={free_port()}']
        cmd += [args[0], *args[1:], '--launcher', 'pytorch']
    else:
        cmd = [sys.executable, *args]
    proc = subprocess.run(cmd, cwd=REPO_DIR, env=env, capture_output=True,
                          text=True,
                          timeout=timeout or subprocess_budget(40))
    if check and proc.returncode != 0:
        raise AssertionError(
            f'{" ".join(cmd)} failed ({proc.returncode}):\n'
            f'{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}')
    return proc


def scalars(work_dir: str) -> list:
    """Entries of mmengine's vis_data/scalars.json of the run in work_dir."""
    paths = sorted(glob.glob(osp.join(work_dir, '*', 'vis_data',
                                      'scalars.json')))
    assert paths, f'no scalars.json under {work_dir}'
    with open(paths[-1]) as f:
        return [json.loads(line) for line in f if line.strip()]
