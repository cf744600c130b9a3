"""tools/train.py and tools/test.py end to end, and their error paths."""
import json
import os
import os.path as osp
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.apis import run_config, train_config
from sapiens2_mm.utils.user_errors import ConfigNotFoundError
from tests.conftest import load_tool, subprocess_budget

from .workflow_utils import REPO_DIR, TEST, TRAIN, WORKFLOW_CFG, make_data, run_tool

train_tool = load_tool('train')
test_tool = load_tool('test')


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A 6-iteration single-process training run of the workflow config."""
    root = tmp_path_factory.mktemp('workflow')
    data = make_data(str(root / 'data'))
    work = str(root / 'train')
    run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', work], data)
    return SimpleNamespace(data=data, work=work, root=root,
                           ckpt=osp.join(work, 'iter_6.pth'))


def _label_maps(data_root):
    import cv2
    ann = osp.join(data_root, 'ann_dir', 'val')
    return {name: cv2.imread(osp.join(ann, name), cv2.IMREAD_UNCHANGED)
            for name in sorted(os.listdir(ann))}


def _miou_numpy(preds, labels, num_classes=3):
    """Independent mIoU/aAcc from a summed confusion matrix."""
    conf = np.zeros((num_classes, num_classes), np.int64)
    for pred, gt in zip(preds, labels):
        conf += np.bincount(gt.ravel() * num_classes + pred.ravel(),
                            minlength=num_classes**2).reshape(num_classes, -1)
    inter = np.diag(conf)
    union = conf.sum(0) + conf.sum(1) - inter
    iou = inter / np.maximum(union, 1)
    return dict(aAcc=100 * inter.sum() / conf.sum(),
                mIoU=100 * np.nanmean(np.where(union > 0, iou, np.nan)))


def test_train_writes_checkpoints_and_logs(trained):
    for name in ('iter_3.pth', 'iter_6.pth', 'last_checkpoint'):
        assert osp.isfile(osp.join(trained.work, name)), name
    ckpt = torch.load(trained.ckpt, map_location='cpu', weights_only=True)
    assert ckpt['meta']['iter'] == 6
    assert 'rng_state' in ckpt  # RNGStateHook added by tools/train.py


@pytest.fixture(scope='module')
def tested(trained):
    """tools/test.py on the .pth with --out and --show-dir."""
    out = str(trained.root / 'preds.pkl')
    show = str(trained.root / 'show')
    work = str(trained.root / 'test')
    run_tool([TEST, WORKFLOW_CFG, trained.ckpt, '--work-dir', work, '--out',
              out, '--show-dir', show], trained.data)
    with open(osp.join(work, 'test_metrics.json')) as f:
        metrics = json.load(f)
    with open(out, 'rb') as f:
        results = pickle.load(f)
    return SimpleNamespace(metrics=metrics, results=results, show=show)


def test_test_pth_metrics_match_independent_iou(trained, tested):
    metrics, results, show = tested.metrics, tested.results, tested.show
    labels = _label_maps(trained.data)
    assert [osp.basename(r['img_path']) for r in results] == sorted(labels)
    preds = [r['pred_sem_seg']['data'].squeeze(0).numpy() for r in results]
    ref = _miou_numpy(preds, list(labels.values()))
    # mmseg rounds its metrics to 2 decimals
    assert metrics['aAcc'] == pytest.approx(ref['aAcc'], abs=0.006)
    assert metrics['mIoU'] == pytest.approx(ref['mIoU'], abs=0.006)
    images = os.listdir(osp.join(show, 'vis_data', 'vis_image'))
    assert len(images) == len(labels)


def test_test_accepts_safetensors_with_same_result(trained, tested, tmp_path):
    from safetensors.torch import save_file
    state = torch.load(trained.ckpt, map_location='cpu',
                       weights_only=True)['state_dict']
    path = str(tmp_path / 'model.safetensors')
    save_file({k: v.contiguous() for k, v in state.items()}, path)
    out = str(tmp_path / 'st.pkl')
    run_tool([TEST, WORKFLOW_CFG, path, '--work-dir', str(tmp_path / 'st'),
              '--out', out], trained.data)
    with open(out, 'rb') as f:
        from_st = pickle.load(f)
    assert len(from_st) == len(tested.results) == 5
    for a, b in zip(tested.results, from_st):
        torch.testing.assert_close(a['seg_logits']['data'],
                                   b['seg_logits']['data'], rtol=0, atol=0)


def test_checkpoint_of_other_size_lists_mismatching_keys(trained, tmp_path):
    """A checkpoint for another arch fails in the load hook, naming keys."""
    from mmengine.registry import MODELS

    from sapiens2_mm.engine.hooks import CheckedCheckpointLoadHook
    from sapiens2_mm.utils.checkpoint import CheckpointMismatchError
    cfg = Config.fromfile(WORKFLOW_CFG)
    model = MODELS.build(cfg.model)
    other = cfg.model.deepcopy()
    other.backbone.arch.update(embed_dims=48, num_layers=3)
    other.decode_head.in_channels = 48
    path = str(tmp_path / 'other.pth')
    torch.save({'state_dict': MODELS.build(other).state_dict()}, path)
    hook = CheckedCheckpointLoadHook(path)
    runner = SimpleNamespace(model=model, logger=None)
    with pytest.raises(CheckpointMismatchError) as err:
        hook.before_run(runner)
    text = str(err.value)
    assert 'unexpected in checkpoint' in text and 'backbone.blocks.2' in text
    assert 'shape mismatch' in text and 'backbone.cls_token' in text
    # and the CLI turns it into a one-line error, not a traceback
    proc = run_tool([TEST, WORKFLOW_CFG, path, '--work-dir',
                     str(tmp_path / 'w')], trained.data, check=False)
    assert proc.returncode != 0
    assert 'error: Checkpoint' in proc.stderr and 'shape mismatch' in \
        proc.stderr


def test_missing_config_and_checkpoint(tmp_path):
    with pytest.raises(ConfigNotFoundError, match='Config file not found'):
        train_tool.build_cfg(train_tool.parse_args(['nope/cfg.py']))
    args = test_tool.parse_args([WORKFLOW_CFG, str(tmp_path / 'none.pth'),
                                 '--work-dir', str(tmp_path)])
    with pytest.raises(run_config.RunConfigError, match='Checkpoint not found'):
        test_tool.build_cfg(args)
    args = train_tool.parse_args([WORKFLOW_CFG, '--resume',
                                  str(tmp_path / 'x.pth'), '--work-dir',
                                  str(tmp_path)])
    with pytest.raises(run_config.RunConfigError, match='--resume checkpoint'):
        train_tool.build_cfg(args)


def test_work_dir_not_writable(tmp_path):
    blocker = tmp_path / 'a_file'
    blocker.write_text('x')
    args = train_tool.parse_args(
        [WORKFLOW_CFG, '--work-dir', str(blocker / 'sub')])
    with pytest.raises(run_config.RunConfigError, match='not writable'):
        train_tool.build_cfg(args)
    args = test_tool.parse_args([
        WORKFLOW_CFG, WORKFLOW_CFG, '--work-dir', str(tmp_path / 'w'),
        '--show-dir', str(blocker / 'show')
    ])
    with pytest.raises(run_config.RunConfigError, match='--show-dir'):
        test_tool.build_cfg(args)


def test_unknown_cfg_options_refused_with_close_match(tmp_path):
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
    args = train_tool.parse_args([
        WORKFLOW_CFG, '--work-dir', str(tmp_path), '--cfg-options',
        'model.backbone.with_cpp=True', 'optim_wrapper.optimizer.lrr=0.1'
    ])
    with pytest.raises(UnknownConfigKeyError) as err:
        train_tool.build_cfg(args)
    text = str(err.value)
    assert "model.backbone.with_cpp" in text and "'with_cp'" in text
    assert "optim_wrapper.optimizer.lrr" in text and "'lr'" in text
    # the CLI prints it and exits non-zero
    proc = run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', str(tmp_path),
                     '--cfg-options', 'train_dataloader.batch_sise=4'],
                    str(tmp_path), check=False)
    assert proc.returncode != 0 and "'batch_size'" in proc.stderr


def test_known_but_unset_cfg_options_accepted(tmp_path):
    args = train_tool.parse_args([
        WORKFLOW_CFG, '--work-dir', str(tmp_path), '--cfg-options',
        'model.backbone.with_cp=True',  # Sapiens2 argument left at default
        'train_dataloader.pin_memory=True',  # DataLoader argument
        'train_dataloader.batch_size=4',
        'train_dataloader.dataset.pipeline.2.prob=1.0',
        'env_cfg.dist_cfg.backend=gloo', 'experiment_name=x'
    ])
    cfg = train_tool.build_cfg(args)
    assert cfg.model.backbone.with_cp is True
    assert cfg.train_dataloader.batch_size == 4
    assert cfg.train_dataloader.dataset.pipeline[2].prob == 1.0


def test_list_index_out_of_range_refused(tmp_path):
    from sapiens2_mm.utils.cfg_options import find_unknown_cfg_options
    cfg = Config.fromfile(WORKFLOW_CFG)
    problems = find_unknown_cfg_options(cfg, {'train_pipeline.9.prob': 1})
    assert 'list of 4 entries' in problems['train_pipeline.9.prob']


def test_amp_sets_bf16_wrapper_or_refuses_on_cpu(tmp_path, monkeypatch):
    cfg = Config.fromfile(WORKFLOW_CFG)
    if not torch.cuda.is_available():
        with pytest.raises(run_config.RunConfigError, match='accelerator'):
            train_config.enable_amp(cfg)
        monkeypatch.setattr(train_config, 'get_device', lambda: 'cuda')
    train_config.enable_amp(cfg)
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    assert cfg.optim_wrapper.dtype == 'bfloat16'
    assert cfg.optim_wrapper.optimizer.lr == 1e-2


def test_resume_auto_and_default_work_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notes = []
    cfg = train_tool.build_cfg(
        train_tool.parse_args([WORKFLOW_CFG, '--resume']), notes)
    # an empty work dir: nothing to resume, said so (not "resumed from None")
    assert cfg.resume is False and cfg.load_from is None
    assert any('no checkpoint found' in n for n in notes), notes
    assert cfg.work_dir == './work_dirs/tiny_seg_workflow'
    assert osp.isdir(tmp_path / 'work_dirs' / 'tiny_seg_workflow')


def test_official_pose_layout_loads_into_mmpose_estimator(tmp_path):
    """Official files name the pose head ``decode_head.``; mmpose ``head.``."""
    from mmengine.registry import MODELS
    from safetensors.torch import save_file

    from sapiens2_mm.engine.hooks import CheckedCheckpointLoadHook
    pose_cfg = osp.join(REPO_DIR, 'configs', 'pose',
                        'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
    assert osp.isfile(pose_cfg), f'shipped config missing: {pose_cfg}'
    model_cfg = Config.fromfile(pose_cfg).model
    source = MODELS.build(model_cfg)
    official = {('decode_head.' + k[len('head.'):] if k.startswith('head.')
                 else k): v.contiguous()
                for k, v in source.state_dict().items()}
    assert any(k.startswith('decode_head.conv_pose') for k in official)
    path = str(tmp_path / 'sapiens2_pose_official.safetensors')
    save_file(official, path)
    target = MODELS.build(model_cfg)
    CheckedCheckpointLoadHook(path).before_run(
        SimpleNamespace(model=target, logger=SimpleNamespace(info=print)))
    for key, value in source.state_dict().items():
        torch.testing.assert_close(target.state_dict()[key], value, rtol=0,
                                   atol=0)


TASK_TINY_CONFIGS = [
    ('seg', 'sapiens2-tiny_1xb2-30_seg29sample-128x96.py', 'mIoU'),
    ('pose', 'sapiens2-tiny_1xb12-300_cocosample-128x96.py', 'coco/AP'),
]


@pytest.mark.slow
@pytest.mark.parametrize('task,name,metric', TASK_TINY_CONFIGS)
def test_task_tiny_config_trains_and_tests(task, name, metric, tmp_path):
    """train.py then test.py (--out, --show-dir) on each task's tiny config.

    Runs in this process; distinct experiment names keep mmengine's global
    logger/visualizer instances of the two runners apart.
    """
    cfg_path = osp.join(REPO_DIR, 'configs', task, name)
    assert osp.isfile(cfg_path), f'shipped config missing: {cfg_path}'
    work = str(tmp_path / 'train')
    train_tool.main([cfg_path, '--work-dir', work, '--cfg-options',
                     'train_cfg.max_iters=2', 'train_cfg.val_interval=2',
                     f'experiment_name={task}_tiny_train'])
    ckpt = osp.join(work, 'iter_2.pth')
    assert osp.isfile(ckpt)
    out, show = str(tmp_path / 'preds.pkl'), str(tmp_path / 'show')
    metrics = test_tool.main([cfg_path, ckpt, '--work-dir',
                              str(tmp_path / 'test'), '--out', out,
                              '--show-dir', show, '--cfg-options',
                              f'experiment_name={task}_tiny_test'])
    assert metric in metrics
    with open(out, 'rb') as f:
        results = pickle.load(f)
    num_images = len({r['img_path'] for r in results})
    drawn = [f for _, _, files in os.walk(show) for f in files
             if f.endswith(('.png', '.jpg'))]
    assert num_images > 0 and len(drawn) >= num_images


SEG_TINY = osp.join(REPO_DIR, 'configs', 'seg',
                    'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')


def test_tta_wraps_the_seg_model_and_runs(tmp_path):
    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    plain = Config.fromfile(SEG_TINY)
    ckpt = str(tmp_path / 'random.pth')
    torch.save({'state_dict': MODELS.build(plain.model).state_dict()}, ckpt)
    cfg = test_tool.build_cfg(test_tool.parse_args([SEG_TINY, ckpt, '--tta']))
    # the sample base names its types with their scope (any default_scope)
    assert cfg.model.type == 'sapiens2_mm.SegFlipTTAModel'
    assert cfg.model.module.type == plain.model.type
    assert cfg.test_dataloader.dataset.pipeline == plain.tta_pipeline
    # End to end with random weights: the flip-averaged model is evaluated.
    metrics = test_tool.main([SEG_TINY, ckpt, '--tta', '--work-dir',
                              str(tmp_path / 'test'), '--cfg-options',
                              'experiment_name=seg_tiny_tta'])
    assert 'mIoU' in metrics


def test_tta_without_tta_model_is_refused(tmp_path):
    pose_tiny = osp.join(REPO_DIR, 'configs', 'pose',
                         'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
    ckpt = tmp_path / 'any.pth'
    ckpt.write_bytes(b'')
    with pytest.raises(SystemExit, match='flip_test'):
        test_tool.main([pose_tiny, str(ckpt), '--tta'])


def _checkpoints(work):
    return sorted(n for n in os.listdir(work) if n.endswith('.pth'))


def test_ctrl_c_prints_checkpoint_and_resume_command(trained, tmp_path,
                                                     monkeypatch, capsys):
    """Ctrl-C after iteration 4 (iter_3.pth saved): a message and exit 130;
    the printed command resumes and finishes the schedule."""
    import shlex

    from mmengine.runner import IterBasedTrainLoop
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', trained.data)
    real_run_iter = IterBasedTrainLoop.run_iter

    def interrupted(self, data_batch):
        if self._iter == 4:
            raise KeyboardInterrupt
        return real_run_iter(self, data_batch)

    monkeypatch.setattr(IterBasedTrainLoop, 'run_iter', interrupted)
    work = str(tmp_path / 'w')
    with pytest.raises(SystemExit) as exit_info:
        train_tool.main([WORKFLOW_CFG, '--work-dir', work, '--cfg-options',
                         'experiment_name=ctrl_c'])
    assert exit_info.value.code == 130
    err = capsys.readouterr().err
    assert 'Traceback' not in err
    assert 'interrupted at iteration 4' in err
    assert f'Last complete checkpoint: {osp.join(work, "iter_3.pth")}' in err
    command = err.split('Resume with:\n')[1].strip().splitlines()[0]
    argv = shlex.split(command)
    assert argv[:2] == ['python', 'tools/train.py'] and argv[-1] == '--resume'
    assert not osp.exists(osp.join(work, '.train.lock'))  # released
    monkeypatch.setattr(IterBasedTrainLoop, 'run_iter', real_run_iter)
    argv = [a.replace('experiment_name=ctrl_c', 'experiment_name=resumed')
            for a in argv[2:]]
    with open(osp.join(work, 'iter_3.pth'), 'rb') as f:
        ckpt3 = f.read()
    train_tool.main(argv)
    ckpt = torch.load(osp.join(work, 'iter_6.pth'), map_location='cpu',
                      weights_only=True)
    assert ckpt['meta']['iter'] == 6
    with open(osp.join(work, 'iter_3.pth'), 'rb') as f:
        assert f.read() == ckpt3  # resumed after it, not rewritten from 0


def test_second_training_in_same_work_dir_refused(trained, tmp_path,
                                                  monkeypatch):
    import socket
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', trained.data)
    work = tmp_path / 'w'
    work.mkdir()
    with open(work / '.train.lock', 'w') as f:  # a live training here
        json.dump(dict(pid=os.getppid(), host=socket.gethostname(),
                       started='now', command='train.py other'), f)
    with pytest.raises(SystemExit, match='in use by another training'):
        train_tool.main([WORKFLOW_CFG, '--work-dir', str(work)])
    assert sorted(os.listdir(work)) == ['.train.lock']  # nothing written


def _other_size_checkpoint(path):
    from mmengine.registry import MODELS

    from sapiens2_mm.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    other = Config.fromfile(WORKFLOW_CFG).model
    other.backbone.arch.update(embed_dims=48)
    other.decode_head.in_channels = 48
    torch.save({'state_dict': MODELS.build(other).state_dict()}, path)


def test_load_from_mismatch_stops_before_first_iteration(trained, tmp_path,
                                                         monkeypatch, caplog):
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', trained.data)
    other = str(tmp_path / 'other.pth')
    _other_size_checkpoint(other)
    work = str(tmp_path / 'w')
    with pytest.raises(SystemExit, match='does not fit') as err:
        train_tool.main([WORKFLOW_CFG, '--work-dir', work, '--cfg-options',
                         f'load_from={other}', 'experiment_name=lf_bad'])
    assert 'shape mismatch' in str(err.value)
    assert _checkpoints(work) == []
    # an intentional partial load trains, and the log lists what was left out
    train_tool.main([WORKFLOW_CFG, '--work-dir', work, '--load-partial',
                     '--cfg-options', f'load_from={other}',
                     'train_cfg.max_iters=1', 'experiment_name=lf_partial'])
    assert _checkpoints(work) == ['iter_1.pth']


def test_load_from_official_pose_layout_keeps_head(tmp_path):
    """An official pose .safetensors (head under ``decode_head.``) given as
    load_from: every tensor, head included, is what training starts from."""
    from mmengine.registry import MODELS
    from safetensors.torch import save_file
    pose_cfg = osp.join(REPO_DIR, 'configs', 'pose',
                        'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
    source = MODELS.build(Config.fromfile(pose_cfg).model).state_dict()
    official = {('decode_head.' + k[len('head.'):] if k.startswith('head.')
                 else k): v.contiguous() for k, v in source.items()}
    path = str(tmp_path / 'sapiens2_pose_official.safetensors')
    save_file(official, path)
    work = str(tmp_path / 'w')
    # lr 0: the one training step leaves the loaded weights unchanged
    train_tool.main([pose_cfg, '--work-dir', work, '--cfg-options',
                     f'load_from={path}', 'train_cfg.max_iters=1',
                     'train_cfg.val_begin=2', 'optim_wrapper.optimizer.lr=0.0',
                     'experiment_name=lf_pose'])
    saved = torch.load(osp.join(work, 'iter_1.pth'), map_location='cpu',
                       weights_only=True)['state_dict']
    assert saved.keys() == source.keys()
    for key, value in source.items():
        torch.testing.assert_close(saved[key], value, rtol=0, atol=0,
                                   msg=key)


def test_sample_job_tests_the_checkpoint_training_wrote():
    """run_sample_job.sh passes its arguments to train.py (e.g.
    train_cfg.max_iters=N), so the checkpoint name is not fixed."""
    with open(osp.join(REPO_DIR, 'tools', 'run_sample_job.sh')) as f:
        script = f.read()
    assert 'iter_300' not in script
    assert 'checkpoint=$(cat "$work_dir/last_checkpoint")' in script
    assert 'tools/test.py "$config" "$checkpoint"' in script


def test_tools_import_the_package_never_a_script():
    """The run policy is in sapiens2_mm.apis.train_config / test_config;
    test.py does not reach into train.py (nor any script) through
    sys.path."""
    for name in ('train', 'test'):
        with open(osp.join(REPO_DIR, 'tools', f'{name}.py')) as f:
            source = f.read()
        assert 'sys.path' not in source and 'import train' not in source
        assert f'sapiens2_mm.apis.{name}_config' in source


def test_plain_checkpoint_hook_is_made_atomic():
    cfg = Config.fromfile(WORKFLOW_CFG)
    cfg.default_hooks.checkpoint.type = 'CheckpointHook'
    notes = []
    train_config.use_atomic_checkpoints(cfg, notes)
    assert cfg.default_hooks.checkpoint.type == \
        'sapiens2_mm.AtomicCheckpointHook'
    assert cfg.default_hooks.checkpoint.max_keep_ckpts == 3  # arguments kept
    assert 'AtomicCheckpointHook' in notes[0]
    base = Config.fromfile(osp.join(REPO_DIR, 'configs', '_base_',
                                    'default_runtime.py'))
    assert base.default_hooks.checkpoint.type == 'AtomicCheckpointHook'


@pytest.mark.slow
def test_real_sigint_exits_130_without_traceback(trained, tmp_path):
    """A real Ctrl-C (SIGINT to the process) once iter_3.pth is written.

    A test hook (tests/configs/workflow/wait_for_sigint_hook.py) parks the
    run after iteration 3's checkpoint and writes a marker; the signal is sent
    only then, so it always lands at that point, never on a race with the
    training finishing first. The waits scale with the load: for the marker,
    40 interpreter starts (conftest.subprocess_budget; parking takes a few);
    for the exit after the signal, twice the time parking took, or 10 starts.
    """
    import signal
    import subprocess
    import sys
    import time
    work = str(tmp_path / 'w')
    marker = str(tmp_path / 'parked')
    cfg = tmp_path / 'parked_cfg.py'
    cfg.write_text(
        f'_base_ = [{WORKFLOW_CFG!r}]\n'
        "custom_imports = dict(imports=['wait_for_sigint_hook'], "
        'allow_failed_imports=False)\n'
        f"custom_hooks = [dict(type='WaitForSigintHook', at_iter=3, "
        f'marker={marker!r})]\n'
        'train_cfg = dict(max_iters=1000)\n')
    env = dict(os.environ, SAPIENS2_WORKFLOW_DATA=trained.data,
               OMP_NUM_THREADS='1',
               PYTHONPATH=os.pathsep.join(
                   [osp.dirname(WORKFLOW_CFG), REPO_DIR,
                    os.environ.get('PYTHONPATH', '')]))
    # tools/train.py run as from a terminal, where Ctrl-C is on: a suite
    # started in the background (``pytest ... &``, nohup, some CI runners)
    # passes SIGINT on ignored, and train.py rightly keeps it ignored then
    # (the run never ended: "timed out after 120 s").
    argv = [TRAIN, str(cfg), '--work-dir', work]
    from_a_terminal = (
        'import runpy, signal, sys; '
        'signal.signal(signal.SIGINT, signal.default_int_handler); '
        f'sys.argv = {argv!r}; runpy.run_path({TRAIN!r}, run_name="__main__")')
    # files, not pipes: a full pipe nobody reads while we wait would block
    # the run before it parks
    out_path, err_path = tmp_path / 'stdout.txt', tmp_path / 'stderr.txt'
    budget = subprocess_budget(40)
    start = time.monotonic()
    with open(out_path, 'w') as out_file, open(err_path, 'w') as err_file:
        proc = subprocess.Popen(
            [sys.executable, '-c', from_a_terminal],
            cwd=REPO_DIR, env=env, stdout=out_file, stderr=err_file)
        while not osp.exists(marker):
            if proc.poll() is not None or time.monotonic() - start > budget:
                proc.kill()
                proc.wait()
                raise AssertionError(f'never parked ({proc.returncode}):\n'
                                     f'{err_path.read_text()[-3000:]}')
            time.sleep(0.2)
        parked_after = time.monotonic() - start
        proc.send_signal(signal.SIGINT)
        exit_budget = max(2 * parked_after, subprocess_budget(10))
        try:
            proc.wait(timeout=exit_budget)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f'still running {exit_budget:.0f} s after '
                                 f'SIGINT:\n{err_path.read_text()[-3000:]}') from None
    out, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 130, [
        line for line in (out + err).splitlines()
        if 'nterrupt' in line or 'rror' in line or 'Trace' in line]
    assert 'Traceback' not in err
    assert 'Training interrupted at iteration' in err
    assert (f'Last complete checkpoint: {osp.join(work, "iter_3.pth")}'
            in err) and '--resume' in err
    assert not osp.exists(osp.join(work, '.train.lock'))


def test_console_without_config_dump_env_and_upstream_notices(trained,
                                                               tmp_path):
    """Issue 18: every run printed the ~400-line config and the torch build
    string at console INFO, and named upstream deprecation notices. The
    console now has neither; the log file keeps the config and environment;
    our own warnings still show."""
    import glob
    work = str(tmp_path / 'w')
    proc = run_tool([TRAIN, WORKFLOW_CFG, '--work-dir', work, '--cfg-options',
                     'train_cfg.max_iters=1'], trained.data)
    console = proc.stdout + proc.stderr
    for text in ('Config:', 'System environment', 'PyTorch compiling',
                 'Build settings', '"FileClient" will be deprecated',
                 '"HardDiskBackend" is the alias',
                 'The prefix is not set in metric class',
                 '``build_loss`` would be deprecated',
                 'pkg_resources is deprecated'):
        assert text not in console, text
    assert 'The config and the system environment are written to' in console
    assert 'train_cfg.max_iters=1 (was 6) rescaled' in console  # ours: shown
    (log, ) = glob.glob(osp.join(work, '*', '*.log'))
    with open(log) as f:
        text = f.read()
    assert 'Config:\n' in text and 'PyTorch compiling details' in text
    assert "type='mmseg.EncoderDecoder'" in text
