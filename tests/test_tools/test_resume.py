"""Resume after an interruption continues the exact schedule.

A straight 6-iteration run saves iter_3 and iter_6. The interruption is made
real by deleting iter_6 and pointing ``last_checkpoint`` back at iter_3 (the
state a job killed after iteration 3 leaves), then ``--resume auto`` trains
iterations 4-6 again. The config has dropout and random flips, so this only
matches when the RNG streams are restored too (RNGStateHook); a control run
from a checkpoint stripped of its RNG state must diverge.
"""
import os
import os.path as osp
import shutil

import pytest
import torch

from sapiens2_mm.apis import run_config, train_config

from .workflow_utils import TRAIN, WORKFLOW_CFG, make_data, run_tool, scalars


def _interrupt_after_iter3(src, dst, keep_rng=True):
    shutil.copytree(src, dst)
    os.remove(osp.join(dst, 'iter_6.pth'))
    ckpt3 = osp.join(dst, 'iter_3.pth')
    if not keep_rng:
        state = torch.load(ckpt3, map_location='cpu', weights_only=True)
        del state['rng_state']
        torch.save(state, ckpt3)
    with open(osp.join(dst, 'last_checkpoint'), 'w') as f:
        f.write(ckpt3)
    for entry in os.listdir(dst):  # the straight run's logs
        if entry[:8].isdigit():
            shutil.rmtree(osp.join(dst, entry))


def _load(path):
    return torch.load(path, map_location='cpu', weights_only=True)


WORKERS = ['--cfg-options', 'train_dataloader.num_workers=2',
           'train_dataloader.persistent_workers=True']


@pytest.mark.slow
@pytest.mark.parametrize('num_workers', [0, 2])
def test_resume_auto_reproduces_straight_run(tmp_path, num_workers):
    """Exact with data-loader workers too (the configs in configs/ use them):
    mmengine reseeds each worker identically and the skipped batches replay
    their draws."""
    data = make_data(str(tmp_path / 'data'))
    extra = WORKERS if num_workers else []
    straight = str(tmp_path / 'straight')
    run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', straight, *extra], data)
    resumed = str(tmp_path / 'resumed')
    _interrupt_after_iter3(straight, resumed)
    proc = run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', resumed, '--resume',
                     *extra], data)
    log = proc.stdout + proc.stderr
    assert 'Advance dataloader 3 steps' in log
    assert f'resuming from {osp.join(resumed, "iter_3.pth")}' in log

    a, b = _load(osp.join(straight, 'iter_6.pth')), _load(
        osp.join(resumed, 'iter_6.pth'))
    assert b['meta']['iter'] == 6
    assert a['state_dict'].keys() == b['state_dict'].keys()
    for key in a['state_dict']:
        torch.testing.assert_close(b['state_dict'][key], a['state_dict'][key],
                                   rtol=0, atol=1e-6, msg=key)
    for sa, sb in zip(a['optimizer']['state'].values(),
                      b['optimizer']['state'].values()):
        for name in ('exp_avg', 'exp_avg_sq', 'step'):
            torch.testing.assert_close(sb[name], sa[name], rtol=0, atol=1e-6)
    assert a['param_schedulers'] == b['param_schedulers']
    # the learning rate logged for iterations 4-6 is the same schedule
    lr_a = [e['lr'] for e in scalars(straight) if 'lr' in e][3:]
    lr_b = [e['lr'] for e in scalars(resumed) if 'lr' in e]
    assert lr_b == lr_a and len(lr_b) == 3
    if num_workers:
        return  # the control below is the same for both

    # control: without the RNG state, dropout/flip draws differ
    control = str(tmp_path / 'control')
    _interrupt_after_iter3(straight, control, keep_rng=False)
    run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', control, '--resume'], data)
    c = _load(osp.join(control, 'iter_6.pth'))
    diff = max((c['state_dict'][k] - a['state_dict'][k]).abs().max().item()
               for k in a['state_dict'])
    assert diff > 1e-4


def _seg_cfg(work_dir):
    from mmengine.config import Config
    cfg = Config.fromfile(WORKFLOW_CFG)
    cfg.work_dir = str(work_dir)
    return cfg


def test_resume_auto_with_only_unreadable_checkpoints_stops(tmp_path):
    """Every checkpoint of the work dir truncated: --resume auto stops and
    lists them (before: a warning and a restart from iteration 0)."""
    torch.save(dict(state_dict={'w': torch.zeros(1000)}),
               tmp_path / 'full.pth')
    data = (tmp_path / 'full.pth').read_bytes()
    for name in ('iter_2.pth', 'iter_4.pth'):
        (tmp_path / name).write_bytes(data[:len(data) // 2])
    (tmp_path / 'last_checkpoint').write_text(str(tmp_path / 'iter_4.pth'))
    (tmp_path / 'iter_6.pth').mkdir()  # per-rank shard folder ('local')
    cfg = _seg_cfg(tmp_path)
    with pytest.raises(run_config.RunConfigError) as err:
        train_config.set_resume(cfg, 'auto', [])
    message = str(err.value)
    for name in ('iter_2.pth', 'iter_4.pth', 'iter_6.pth'):
        assert name in message
    assert 'start over' in message
    assert not cfg.get('resume')
    with pytest.raises(run_config.RunConfigError, match='is a folder'):
        train_config.set_resume(cfg, str(tmp_path / 'iter_6.pth'), [])


def test_resume_checkpoint_of_another_task_named(tmp_path):
    """A pose checkpoint resumed with a seg config: both tasks named (before:
    an optimizer parameter-group traceback)."""
    from mmengine.config import Config

    from tests.conftest import REPO_DIR
    pose = Config.fromfile(osp.join(
        REPO_DIR, 'configs', 'pose',
        'sapiens2-tiny_1xb12-300_cocosample-128x96.py'))
    ckpt = tmp_path / 'iter_4.pth'
    torch.save(dict(state_dict={'w': torch.zeros(1)},
                    meta=dict(cfg=pose.pretty_text)), ckpt)
    cfg = _seg_cfg(tmp_path / 'work')
    with pytest.raises(run_config.RunConfigError,
                       match='checkpoint of task pose, config of task seg'):
        train_config.set_resume(cfg, str(ckpt), [])
    (tmp_path / 'work').mkdir()
    shutil.copy(ckpt, tmp_path / 'work' / 'iter_4.pth')
    with pytest.raises(run_config.RunConfigError, match='task pose.*task seg'):
        train_config.set_resume(cfg, 'auto', [])
