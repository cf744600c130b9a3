"""tools/analysis_tools/compare_models.py: the documented commands
(docs/baselines.md) with checkpoints of random weights, one timing round
pair; rows checked against tools/test.py and get_flops, outputs never
overwritten."""
import csv
import json
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.apis.model_compare import build_timed_model
from sapiens2_mm.apis.model_cost import config_cost

from .workflow_utils import REPO_DIR, load_tool

pytestmark = pytest.mark.usefixtures('one_torch_thread')

test_tool = load_tool('test')


def _load_compare():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'sapiens2_tools_compare_models',
        osp.join(REPO_DIR, 'tools', 'analysis_tools', 'compare_models.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = _load_compare()
#: family -> [(config, checkpoint path of the docs, row name)]; the docs
#: commands of docs/baselines.md are built from these
FAMILIES = {
    'pose': [
        ('configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py',
         'work_dirs/pose_tiny/iter_300.pth', 'sapiens2-tiny'),
        ('configs/baselines/pose/td-hm_res18_1xb12-300_cocosample-128x96.py',
         'work_dirs/pose_res18/iter_300.pth', 'simplebaseline-r18'),
        ('configs/baselines/pose/'
         'td-hm_vitpose-tiny_1xb12-300_cocosample-128x96.py',
         'work_dirs/pose_vitpose/iter_300.pth', 'vitpose-tiny')],
    'seg': [
        ('configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py',
         'work_dirs/seg_tiny/iter_30.pth', 'sapiens2-tiny'),
        ('configs/baselines/seg/segformer_mit-b0_1xb2-30_seg29sample-128x96.py',
         'work_dirs/seg_segformer/iter_30.pth', 'segformer-b0'),
        ('configs/baselines/seg/'
         'deeplabv3plus_r18-d8_1xb2-30_seg29sample-128x96.py',
         'work_dirs/seg_deeplab/iter_30.pth', 'deeplabv3plus-r18')],
    'normal': [
        ('configs/normal/sapiens2-tiny_1xb2-30_densesample-128x96.py',
         'work_dirs/normal_tiny/iter_30.pth', 'sapiens2-tiny'),
        ('configs/baselines/normal/'
         'normal-head_vit-tiny_1xb2-30_densesample-128x96.py',
         'work_dirs/normal_vit/iter_30.pth', 'vit-tiny'),
        ('configs/baselines/normal/'
         'normal-head_r18-d16_1xb2-30_densesample-128x96.py',
         'work_dirs/normal_r18/iter_30.pth', 'resnet18-d16')],
}


def documented_command(family: str) -> str:
    """The command of docs/baselines.md for ``family`` (one line)."""
    models = FAMILIES[family]
    parts = ['python tools/analysis_tools/compare_models.py']
    parts += [f'{config} {ckpt}' for config, ckpt, _ in models]
    parts += ['--names ' + ' '.join(name for _, _, name in models),
              f'--out-dir work_dirs/compare_{family}']
    return ' '.join(parts)


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO_DIR)


def _random_checkpoint(config: str, path: str) -> str:
    torch.manual_seed(0)
    model = build_timed_model(Config.fromfile(config), 'cpu')
    torch.save({'state_dict': model.state_dict(), 'meta': {}}, path)
    return path


def _run(family, tmp_path, out_dir):
    """The documented command with random-weight checkpoints, the outputs
    in ``out_dir`` and a short timing."""
    argv = documented_command(family).split()[2:]
    for config, ckpt, name in FAMILIES[family]:
        argv[argv.index(ckpt)] = _random_checkpoint(
            config, str(tmp_path / f'{name}.pth'))
    argv[argv.index(f'work_dirs/compare_{family}')] = str(out_dir)
    return compare.main(argv + ['--repeat', '1', '--rounds', '2',
                                '--batch-size', '2'])


@pytest.mark.slow
@pytest.mark.parametrize('family', sorted(FAMILIES))
def test_documented_comparison(family, tmp_path):
    out = tmp_path / 'out'
    result = _run(family, tmp_path, out)
    rows, warnings = result['rows'], result['warnings']
    models = FAMILIES[family]
    assert [r['model'] for r in rows] == [name for _, _, name in models]
    for row, (config, _, _) in zip(rows, models):
        cfg = Config.fromfile(config)
        cost = config_cost(cfg)
        assert row['params_m'] == pytest.approx(cost['params'] / 1e6)
        assert row['gmacs'] == pytest.approx(cost['macs'] / 1e9)
        assert row['gflops'] == pytest.approx(2 * row['gmacs'])
        assert row['input'] == '128x96' and row['images_per_s'] > 0
    assert rows[0]['speed_ratio'] == 1.0
    # the rows are what tools/test.py reports for each model: every
    # baseline config tests on the same sample with the same evaluator
    for row, (config, _, name) in zip(rows, models):
        metrics = test_tool.main([config, str(tmp_path / f'{name}.pth'),
                                  '--work-dir', str(tmp_path / name)])
        for key in row:
            if key in metrics:
                assert row[key] == pytest.approx(float(metrics[key]))
    if family == 'seg':
        assert any('metric convention' in w for w in warnings)
        for row in rows:  # absent classes skipped: never a lower mean
            assert row['mmseg/mIoU'] >= row['mIoU']
        assert any(w.startswith('losses differ') for w in warnings)
    if family == 'pose':  # all three flip-test, at one size
        assert not any(w.startswith(('flip tests', 'test input sizes'))
                       for w in warnings)
    files = [out / name for name in compare.OUTPUTS]
    assert all(f.is_file() and f.stat().st_size for f in files)
    assert json.loads((out / 'compare.json').read_text())['rows'] == rows
    with open(out / 'compare.csv') as f:
        assert [r['model'] for r in csv.DictReader(f)] == [
            r['model'] for r in rows]
    assert (out / 'compare.png').read_bytes()[:4] == b'\x89PNG'
    text = (out / 'compare.md').read_text()
    assert 'GMACs (zoo "FLOPs")' in text and 'GFLOPs (2 x MACs)' in text


def test_existing_outputs_are_never_overwritten(tmp_path, capsys):
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'compare.csv').write_text('earlier results')
    config, _, _ = FAMILIES['seg'][0]
    ckpt = _random_checkpoint(config, str(tmp_path / 'a.pth'))
    with pytest.raises(SystemExit) as err:
        compare.main([config, ckpt, '--out-dir', str(out)])
    assert 'compare.csv' in str(err.value) and 'refusing to overwrite' in \
        str(err.value)
    assert (out / 'compare.csv').read_text() == 'earlier results'
    assert not (out / 'work').exists()  # refused before any evaluation


def test_odd_arguments_and_missing_checkpoint(tmp_path):
    config, _, _ = FAMILIES['seg'][0]
    with pytest.raises(SystemExit):
        compare.parse_args([config, '--out-dir', str(tmp_path)])
    with pytest.raises(SystemExit, match='Checkpoint not found'):
        compare.main([config, str(tmp_path / 'none.pth'), '--out-dir',
                      str(tmp_path / 'o')])


def test_warnings_name_what_differs():
    from sapiens2_mm.apis.model_compare import comparison_warnings
    pose = [Config.fromfile(c) for c, _, _ in FAMILIES['pose']]
    pose[2].model.test_cfg.flip_test = False
    warnings = comparison_warnings(['a', 'b', 'c'], pose,
                                   [(128, 96), (128, 96), (256, 192)])
    (size, ) = [w for w in warnings if w.startswith('test input sizes')]
    assert 'a: (128, 96); b: (128, 96); c: (256, 192)' in size
    (flip, ) = [w for w in warnings if w.startswith('flip tests')]
    assert 'a: True; b: True; c: False' in flip


def test_docs_show_the_tested_commands():
    """docs/baselines.md shows the commands test_documented_comparison
    runs (one line each after joining continuation lines)."""
    from tests.test_docs_commands import documented_commands
    documented = documented_commands()
    for family in FAMILIES:
        assert documented_command(family) in documented, family


def test_scoped_folds_mmengine_scope_annotations():
    """A value taken from an mmpose:: base carries _scope_='mmpose': the same
    evaluator, not another one (it warned that the baselines evaluate with
    another metric)."""
    from sapiens2_mm.apis.model_compare import scoped
    ref = Config.fromfile(FAMILIES['pose'][0][0]).test_evaluator
    stock = Config.fromfile(FAMILIES['pose'][1][0]).test_evaluator
    assert stock.get('_scope_') == 'mmpose'
    assert scoped(stock, 'mmpose') == scoped(ref, 'sapiens2_mm') == dict(
        type='mmpose.CocoMetric',
        ann_file='tests/data/coco_sample/test_coco.json')
    assert scoped(dict(type='CocoMetric', _scope_='mmpose'), 'mmseg') == \
        dict(type='mmpose.CocoMetric')
