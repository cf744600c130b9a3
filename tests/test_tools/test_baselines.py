"""Stock mmpose / mmseg configs (configs/baselines/, shrunk and pointed at
the bundled samples) through our tools and through mmpose's and mmseg's own
train/test entry points (<package>/.mim/tools, run in-process)."""
import json
import math
import os.path as osp
import runpy
import sys

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm import upstream

from .workflow_utils import REPO_DIR, load_tool

pytestmark = pytest.mark.usefixtures('one_torch_thread')

train_tool = load_tool('train')
test_tool = load_tool('test')
BASELINES = osp.join(REPO_DIR, 'configs', 'baselines')
RES18 = osp.join(BASELINES, 'pose', 'td-hm_res18_1xb12-300_cocosample-128x96.py')
VITPOSE = osp.join(BASELINES, 'pose',
                   'td-hm_vitpose-tiny_1xb12-300_cocosample-128x96.py')
SEGFORMER = osp.join(BASELINES, 'seg',
                     'segformer_mit-b0_1xb2-30_seg29sample-128x96.py')
DEEPLAB = osp.join(BASELINES, 'seg',
                   'deeplabv3plus_r18-d8_1xb2-30_seg29sample-128x96.py')
NORMAL_VIT = osp.join(BASELINES, 'normal',
                      'normal-head_vit-tiny_1xb2-30_densesample-128x96.py')
NORMAL_R18 = osp.join(BASELINES, 'normal',
                      'normal-head_r18-d16_1xb2-30_densesample-128x96.py')
SAMPLE_BASELINES = {'res18': (RES18, 'coco/AP'),
                    'vitpose': (VITPOSE, 'coco/AP'),
                    'segformer': (SEGFORMER, 'mIoU'),
                    'deeplab': (DEEPLAB, 'mIoU'),
                    'normal_vit': (NORMAL_VIT, 'normal_mae'),
                    'normal_r18': (NORMAL_R18, 'normal_mae')}


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    """The configs name the samples relative to the repository root."""
    monkeypatch.chdir(REPO_DIR)


def _train_ours(config, work_dir, iters=2):
    train_tool.main([config, '--work-dir', work_dir, '--cfg-options',
                     f'train_cfg.max_iters={iters}'])
    return osp.join(work_dir, f'iter_{iters}.pth')


def _run_upstream(package, tool, *args):
    """``python <package>/.mim/tools/<tool>.py ARGS`` in this process."""
    path = upstream.tool_path(package, tool)
    argv = sys.argv
    sys.argv = [path, *args]
    try:
        runpy.run_path(path, run_name='__main__')
    finally:
        sys.argv = argv


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """Each sample baseline trained 2 iterations by our tools/train.py."""
    root = tmp_path_factory.mktemp('baselines')
    return {name: _train_ours(config, str(root / name))
            for name, (config, _) in SAMPLE_BASELINES.items()}


def test_stock_configs_keep_their_scope_and_upstream_model():
    """The baselines are the upstream config plus a few lines: the scope and
    model types stay mmpose's / mmseg's, the data is our sample's."""
    for config, scope, model_type, backbone in (
            (RES18, 'mmpose', 'TopdownPoseEstimator', 'ResNet'),
            (VITPOSE, 'mmpose', 'TopdownPoseEstimator',
             'mmpretrain.VisionTransformer'),
            (SEGFORMER, 'mmseg', 'EncoderDecoder', 'MixVisionTransformer'),
            (DEEPLAB, 'mmseg', 'EncoderDecoder', 'ResNetV1c'),
            (NORMAL_VIT, 'sapiens2_mm', 'DenseEstimator',
             'mmpretrain.VisionTransformer'),
            (NORMAL_R18, 'sapiens2_mm', 'DenseEstimator', 'mmseg.ResNetV1c')):
        cfg = Config.fromfile(config)
        assert cfg.default_scope == scope
        assert cfg.model.type == model_type
        assert cfg.model.backbone.type == backbone
        assert cfg.test_evaluator.type.startswith(
            'mmpose.' if scope == 'mmpose' else 'sapiens2_mm.')
        assert cfg.test_dataloader.dataset.data_root.startswith('tests/data')
        assert sum(len(line) > 0 and not line.startswith('#')
                   for line in open(config)) < 60


@pytest.mark.parametrize('name', sorted(SAMPLE_BASELINES))
def test_our_tools_train_and_test_stock_configs(name, trained, tmp_path):
    config, key = SAMPLE_BASELINES[name]
    out = tmp_path / 'preds.pkl'  # --out inserts our dump metric, scoped
    metrics = test_tool.main([config, trained[name], '--work-dir',
                              str(tmp_path), '--out', str(out)])
    assert math.isfinite(float(metrics[key]))
    assert out.stat().st_size > 0
    with open(tmp_path / 'test_metrics.json') as f:
        assert json.load(f)[key] == pytest.approx(float(metrics[key]))


def test_our_test_loads_foreign_checkpoints_strictly(trained, tmp_path,
                                                     capsys):
    """A ResNet-18 checkpoint for the ViTPose config is refused in the
    checked load, naming the keys, as for our own models."""
    with pytest.raises(SystemExit) as err:
        test_tool.main([VITPOSE, trained['res18'], '--work-dir',
                        str(tmp_path)])
    text = str(err.value)
    assert text.startswith('error: Checkpoint') and 'backbone.layer1' in text


def test_mmpose_own_tools_run_the_stock_config(tmp_path):
    """mmpose's tools/train.py through the entry of docs/baselines.md
    (python -m sapiens2_mm.upstream mmpose train ...), its tools/test.py run
    directly with nothing but the config's custom_imports line."""
    cfg = Config.fromfile(RES18)
    assert 'sapiens2_mm' in cfg.custom_imports.imports
    work = str(tmp_path / 'train')
    upstream.main(['mmpose', 'train', RES18, '--work-dir', work,
                   '--cfg-options', 'train_cfg.max_iters=2'])
    ckpt = osp.join(work, 'iter_2.pth')
    assert osp.isfile(ckpt)
    _run_upstream('mmpose', 'test', RES18, ckpt, '--work-dir',
                  str(tmp_path / 'test'))
    assert any('coco/AP' in p.read_text()
               for p in (tmp_path / 'test').rglob('*.log'))
    # and our test.py reads the checkpoint mmpose's train.py wrote
    metrics = test_tool.main([RES18, ckpt, '--work-dir',
                              str(tmp_path / 'ours')])
    assert math.isfinite(metrics['coco/AP'])


def test_mmseg_own_tools_run_the_stock_config(tmp_path):
    """mmseg's tools/train.py run directly (the config's import line), its
    tools/test.py through the entry of docs/baselines.md."""
    work = str(tmp_path / 'train')
    _run_upstream('mmseg', 'train', SEGFORMER, '--work-dir', work,
                  '--cfg-options', 'train_cfg.max_iters=2')
    ckpt = osp.join(work, 'iter_2.pth')
    state = torch.load(ckpt, map_location='cpu', weights_only=True)
    assert state['meta']['iter'] == 2
    upstream.main(['mmseg', 'test', SEGFORMER, ckpt, '--work-dir',
                   str(tmp_path / 'test')])
    logs = list((tmp_path / 'test').rglob('*.log'))
    assert logs and any('mIoU' in p.read_text() for p in logs)


def test_python_m_entry_runs_a_tool_that_imports_mmpose_first(capsys):
    """mmpose's get_flops.py imports mmpose.apis before it reads the config,
    so custom_imports cannot help it; the -m entry loads sapiens2_mm
    first."""
    upstream.main(['mmpose', 'analysis_tools/get_flops', RES18,
                   '--input-shape', '128', '96'])
    out = capsys.readouterr().out
    assert 'Input shape: (1, 3, 128, 96)' in out


def test_python_m_entry_names_the_tools_it_has():
    with pytest.raises(ValueError, match='analysis_tools/get_flops'):
        upstream.tool_path('mmpose', 'get_flop')
    with pytest.raises(ValueError, match='Unknown package'):
        upstream.tools_dir('mmdet')
