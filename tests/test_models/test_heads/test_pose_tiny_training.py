"""A short run of the tiny COCO-sample config: the loss drops and AP rises.

The full overfit (AP ~1 after 300 iterations) is
projects/pose_overfit/overfit_coco_sample.py, documented in docs/pose.md.
"""
import pytest
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

CONFIG = 'configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py'


@pytest.mark.slow
@pytest.mark.usefixtures('one_torch_thread')  # restored after (conftest)
def test_tiny_pose_learns_on_coco_sample(repo_path, tmp_path, monkeypatch):
    monkeypatch.chdir(repo_path())
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = str(tmp_path)
    iters = 80
    cfg.train_cfg.max_iters = iters
    cfg.train_cfg.val_interval = iters + 1
    cfg.param_scheduler[1].end = iters
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=-1)
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    before = runner.val_loop.run()['coco/AP']
    losses = []

    class LossRecorder(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None,
                             outputs=None):
            losses.append(float(outputs['loss_kpt']))

    runner.register_hook(LossRecorder(), priority='LOWEST')
    runner.train()
    after = runner.val_loop.run()['coco/AP']
    print(f'tiny pose: AP {before:.3f} -> {after:.3f} after {iters} iters')
    assert len(losses) == iters
    assert sum(losses[-5:]) < 0.5 * sum(losses[:5])
    assert before < 0.05
    assert after > before + 0.2, (before, after)
