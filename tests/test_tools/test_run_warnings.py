"""A tiny train + test run prints none of the warnings that read as breakage."""
import os.path as osp
import subprocess
import sys

import pytest

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
POSE_TINY = osp.join('configs', 'pose',
                     'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
UNWANTED = ('Failed to search registry with scope',
            'may cause unexpected failure',
            'metainfo config file',
            'Failed to import `sapiens2_mm.registry`')


def run_tool(args):
    result = subprocess.run([sys.executable, *args], capture_output=True,
                            text=True, cwd=REPO,
                            env={'PYTHONPATH': REPO, 'PATH': '/usr/bin:/bin'})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.slow
def test_tiny_pose_train_and_test_print_no_scope_or_metainfo_warning(tmp_path):
    work = str(tmp_path / 'train')
    output = run_tool([
        'tools/train.py', POSE_TINY, '--work-dir', work, '--cfg-options',
        'train_cfg.max_iters=1', 'train_cfg.val_interval=1'])
    output += run_tool([
        'tools/test.py', POSE_TINY, osp.join(work, 'iter_1.pth'), '--work-dir',
        str(tmp_path / 'test')])
    assert 'coco/AP' in output  # the runs did evaluate
    found = [line for line in output.splitlines()
             if any(text in line for text in UNWANTED)]
    assert not found, '\n'.join(found)
