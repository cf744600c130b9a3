"""Paths of the tiny CPU configs of each task (names owned by the task code)."""
import glob
import os.path as osp

from tests.conftest import REPO_DIR


def tiny_config(task: str) -> str:
    """The ``configs/<task>/sapiens2-tiny_*.py`` config (exactly one)."""
    found = sorted(glob.glob(
        osp.join(REPO_DIR, 'configs', task, 'sapiens2-tiny_*.py')))
    assert len(found) == 1, f'expected one tiny {task} config, got {found}'
    return found[0]
