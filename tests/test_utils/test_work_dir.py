"""Which checkpoint ``--resume auto`` takes: fallback, moved and copied dirs."""
import os
import os.path as osp
import shutil

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.apis import run_config, train_config
from sapiens2_mm.utils.work_dir import (
    checkpoint_problem,
    find_resume_checkpoint,
    read_last_checkpoint,
)
from tests.test_engine.toy_runner import toy_runner
from tests.test_tools.workflow_utils import WORKFLOW_CFG


@pytest.fixture(scope='module')
def three_checkpoints(tmp_path_factory):
    """A real work dir with iter_1..3.pth and last_checkpoint -> iter_3."""
    work = tmp_path_factory.mktemp('three')
    toy_runner(work, max_iters=3, checkpoint=dict(max_keep_ckpts=3),
               name='work_dir_three').train()
    return str(work)


def _truncate(path):
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 2])


def test_truncated_newest_falls_back_to_previous(three_checkpoints, tmp_path):
    work = str(tmp_path / 'w')
    shutil.copytree(three_checkpoints, work)
    _truncate(osp.join(work, 'iter_3.pth'))
    assert checkpoint_problem(osp.join(work, 'iter_3.pth')) is not None
    found, notes = find_resume_checkpoint(work)
    assert found == osp.join(work, 'iter_2.pth')
    assert len(notes) == 1 and 'iter_3.pth' in notes[0]
    # what tools/train.py --resume does with it, and says
    cfg = Config.fromfile(WORKFLOW_CFG)
    cfg.work_dir = work
    notes = []
    train_config.set_resume(cfg, 'auto', notes)
    assert cfg.resume is True and cfg.load_from == found
    assert any('skipped' in n and 'iter_3.pth' in n for n in notes), notes
    assert any('falling back' in n and 'iter_2.pth' in n for n in notes)
    # and mmengine resumes from it: iteration 2 -> 4
    runner = toy_runner(work, max_iters=4, resume=True, load_from=found,
                        checkpoint=dict(max_keep_ckpts=3),
                        name='work_dir_fallback')
    runner.train()
    ckpt = torch.load(osp.join(work, 'iter_4.pth'), weights_only=True)
    assert ckpt['meta']['iter'] == 4


def test_explicit_truncated_resume_path_refused(three_checkpoints, tmp_path):
    bad = str(tmp_path / 'iter_3.pth')
    shutil.copy(osp.join(three_checkpoints, 'iter_3.pth'), bad)
    _truncate(bad)
    cfg = Config.fromfile(WORKFLOW_CFG)
    cfg.work_dir = str(tmp_path)
    with pytest.raises(run_config.RunConfigError, match='cannot be read'):
        train_config.set_resume(cfg, bad)


def test_moved_work_dir_resumes_from_itself(three_checkpoints, tmp_path):
    src = str(tmp_path / 'before')
    shutil.copytree(three_checkpoints, src)
    with open(osp.join(src, 'last_checkpoint'), 'w') as f:
        f.write(osp.join(src, 'iter_3.pth'))  # absolute, as mmengine writes
    moved = str(tmp_path / 'after')
    shutil.move(src, moved)
    assert read_last_checkpoint(moved) == osp.join(moved, 'iter_3.pth')
    assert find_resume_checkpoint(moved)[0] == osp.join(moved, 'iter_3.pth')


def test_copied_work_dir_does_not_resume_from_original(three_checkpoints,
                                                        tmp_path):
    copy = str(tmp_path / 'copy')
    shutil.copytree(three_checkpoints, copy)
    with open(osp.join(copy, 'last_checkpoint')) as f:
        assert f.read().startswith(three_checkpoints)  # the original's path
    assert find_resume_checkpoint(copy)[0] == osp.join(copy, 'iter_3.pth')


def test_empty_work_dir_finds_nothing(tmp_path):
    assert find_resume_checkpoint(str(tmp_path)) == (None, [])
    (tmp_path / 'iter_5.pth').write_bytes(b'')
    found, notes = find_resume_checkpoint(str(tmp_path))
    assert found is None and 'empty file' in notes[0]
    os.remove(tmp_path / 'iter_5.pth')
