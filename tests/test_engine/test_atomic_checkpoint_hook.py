"""AtomicCheckpointHook: a save that fails half-way keeps the previous one."""
import errno
import os
import os.path as osp

import pytest
import torch
from mmengine.fileio.backends import LocalBackend

from sapiens2_mm.utils.work_dir import checkpoint_problem, read_last_checkpoint

from .toy_runner import toy_runner


def _last(work_dir):
    with open(osp.join(work_dir, 'last_checkpoint')) as f:
        return f.read().strip()


def _fail_third_save(monkeypatch, error):
    """Make the third checkpoint write stop half-way through with ``error``."""
    calls = []
    real_put = LocalBackend.put

    def put(self, obj, filepath):
        calls.append(filepath)
        if len(calls) < 3:
            return real_put(self, obj, filepath)
        with open(filepath, 'wb') as f:  # half the bytes reach the disk
            f.write(obj[:len(obj) // 2])
        raise error

    monkeypatch.setattr(LocalBackend, 'put', put)


@pytest.mark.parametrize('error', [
    OSError(errno.ENOSPC, 'No space left on device'), KeyboardInterrupt()
])
def test_failed_save_keeps_previous_checkpoint(tmp_path, monkeypatch, error):
    _fail_third_save(monkeypatch, error)
    runner = toy_runner(tmp_path, max_iters=3,
                        name=f'atomic_{type(error).__name__}')
    with pytest.raises(type(error)):
        runner.train()
    # max_keep_ckpts=1: mmengine would have deleted iter_2 before the save
    names = sorted(os.listdir(tmp_path))
    assert 'iter_2.pth' in names and 'iter_3.pth' not in names, names
    assert not [n for n in names if n.endswith('.part')], names
    assert _last(tmp_path) == osp.join(str(tmp_path), 'iter_2.pth')
    assert checkpoint_problem(_last(tmp_path)) is None
    ckpt = torch.load(_last(tmp_path), map_location='cpu', weights_only=True)
    assert ckpt['meta']['iter'] == 2
    assert ckpt['message_hub']['runtime_info']['keep_ckpt_ids'] == [2]


def test_successful_saves_keep_max_and_point_last(tmp_path):
    runner = toy_runner(tmp_path, max_iters=3, name='atomic_ok',
                        checkpoint=dict(max_keep_ckpts=2))
    runner.train()
    names = sorted(n for n in os.listdir(tmp_path) if n.endswith('.pth'))
    assert names == ['iter_2.pth', 'iter_3.pth']
    assert read_last_checkpoint(str(tmp_path)) == osp.join(
        str(tmp_path), 'iter_3.pth')


def test_misspelt_argument_refused_when_built():
    from sapiens2_mm.engine.hooks import AtomicCheckpointHook
    with pytest.raises(TypeError, match="'intervall' \\(did you mean "
                       "'interval'\\?\\)"):
        AtomicCheckpointHook(intervall=1)


def test_failed_best_save_keeps_previous_best(tmp_path, monkeypatch):
    runner = toy_runner(tmp_path, max_iters=1, name='atomic_best',
                        checkpoint=dict(save_best='acc', rule='greater'))
    runner.train()
    hook = next(h for h in runner.hooks if hasattr(h, 'save_best'))
    hook._save_best_checkpoint(runner, {'acc': 1.0})
    first = osp.join(str(tmp_path), 'best_acc_iter_1.pth')
    assert checkpoint_problem(first) is None
    runner.train_loop._iter = 2
    real_put = LocalBackend.put

    def failing_put(self, obj, filepath):
        with open(filepath, 'wb') as f:
            f.write(obj[:len(obj) // 2])
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(LocalBackend, 'put', failing_put)
    with pytest.raises(OSError):
        hook._save_best_checkpoint(runner, {'acc': 2.0})
    assert checkpoint_problem(first) is None  # mmengine removed it first
    names = os.listdir(tmp_path)
    assert 'best_acc_iter_2.pth' not in names
    assert not [n for n in names if n.endswith('.part')]
    monkeypatch.setattr(LocalBackend, 'put', real_put)
    hook._save_best_checkpoint(runner, {'acc': 2.0})
    assert checkpoint_problem(osp.join(str(tmp_path),
                                       'best_acc_iter_2.pth')) is None
    assert not osp.exists(first)


def _folder(path, content):
    os.makedirs(path)
    with open(osp.join(path, 'shard'), 'w') as f:
        f.write(content)


def _content(path):
    with open(osp.join(path, 'shard')) as f:
        return f.read()


def test_folder_checkpoint_replaced_only_when_the_new_one_is_in_place(
        tmp_path, monkeypatch):
    """A sharded (folder) checkpoint of the same name is replaced by the new
    one; when the rename fails, the old one is back under its name."""
    from sapiens2_mm.engine.hooks.atomic_checkpoint_hook import _replace
    final, part = str(tmp_path / 'iter_4.pth'), str(tmp_path / '.iter_4.part')
    _folder(final, 'old')
    _folder(part, 'new')
    real = os.replace
    calls = []

    def replace_failing_second(src, dst):
        calls.append(src)
        if len(calls) == 2:
            raise OSError(errno.EIO, 'I/O error')
        return real(src, dst)

    monkeypatch.setattr(os, 'replace', replace_failing_second)
    with pytest.raises(OSError):
        _replace(part, final)
    assert _content(final) == 'old'
    monkeypatch.setattr(os, 'replace', real)
    _replace(part, final)
    assert _content(final) == 'new'
    assert sorted(os.listdir(tmp_path)) == ['iter_4.pth']
