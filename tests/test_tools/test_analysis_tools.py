"""tools/analysis_tools: get_flops, print_config, analyze_logs, browse_dataset,
benchmark_cpu_stages (estimate_memory: test_estimate_memory.py; tools/benchmarks:
test_benchmarks.py)."""
import json
import os.path as osp

import cv2
import numpy as np
import pytest
from mmengine.config import Config

from tests.conftest import REPO_DIR, load_tool
from tests.tiny_variants import DENSE_TASKS

from .workflow_utils import WORKFLOW_CFG, make_data

ANALYSIS = osp.join(REPO_DIR, 'tools', 'analysis_tools')


def _tool(name):
    return load_tool(f'analysis_tools/{name}')


get_flops = _tool('get_flops')
print_config = _tool('print_config')
analyze_logs = _tool('analyze_logs')
browse_dataset = _tool('browse_dataset')


def _analytic_macs(arch, h, w, patch=16, prefix=9, tokenizer=False,
                   window=4):
    """Linear+conv and attention MACs of a Sapiens2 backbone, by formula.

    With ``tokenizer`` (the 4K stem): MHSA blocks on every window of
    ``window`` x ``window`` patches plus its CLS token, then the trunk on
    the window grid."""
    from sapiens2_mm.models.backbones.arch_zoo import (
        num_kv_heads_of_block,
        resolve_arch,
    )
    s = resolve_arch(arch)
    c, layers, heads, ffn = (s['embed_dims'], s['num_layers'], s['num_heads'],
                             s['feedforward_channels'])
    hd = c // heads
    grid = (h // patch) * (w // patch)
    linear = grid * c * 3 * patch * patch  # patch-embed conv
    attention = 0
    if tokenizer:
        grid //= window * window
        tokens = window * window + 1
        linear += s['num_tokenizer_layers'] * grid * tokens * (
            4 * c * c + 3 * c * ffn)
        attention += s['num_tokenizer_layers'] * grid * 2 * heads * \
            tokens**2 * hd
    n = grid + prefix
    for i in range(layers):
        kv = num_kv_heads_of_block(i, layers, heads) * hd
        linear += n * (2 * c * c + 2 * c * kv + c * 2 * ffn + ffn * c)
        attention += 2 * heads * n * n * hd
    return linear, attention


# Parameter counts verified on the official code (architecture zoo).
OFFICIAL_PARAMS = {
    'sapiens2_0.1b': 113_993_472,
    'sapiens2_0.4b': 395_450_368,
    'sapiens2_1b': 1_455_474_176,
}


@pytest.mark.parametrize('arch', sorted(OFFICIAL_PARAMS))
def test_get_flops_official_sizes_params_and_macs(arch):
    result = get_flops.count(get_flops.backbone_cfg(arch))
    assert result['params'] == OFFICIAL_PARAMS[arch]
    assert result['shape'] == (1024, 768)
    linear, attention = _analytic_macs(arch, 1024, 768)
    assert result['linear_macs'] == linear
    assert result['attention_macs'] == attention
    assert result['flops'] == 2 * (linear + attention)


def test_get_flops_4k_backbone_params_and_macs(capsys):
    """The 1B-4K entry: the tokenizer runs 4 MHSA blocks on each of the
    64 x 48 windows of 4 x 4 patches (17 tokens with the CLS), then the 1b
    trunk on the window grid; by formula, exactly."""
    result = get_flops.main(['--arch', 'sapiens2_1b_4k'])
    assert 'sapiens2_1b_4k  input 1x3x4096x3072' in capsys.readouterr().out
    assert result['params'] == 1_606_588_928  # reference (official code)
    assert result['shape'] == (4096, 3072)
    linear, attention = _analytic_macs('sapiens2_1b', 4096, 3072,
                                       tokenizer=True)
    assert (result['linear_macs'], result['attention_macs']) == (linear,
                                                                 attention)
    # the trunk sees the token count of a 1024x768 input
    _, trunk_attention = _analytic_macs('sapiens2_1b', 1024, 768)
    assert attention > trunk_attention


def test_get_flops_01b_close_to_model_card():
    """The card's 0.342 T is within 3% of our linear+conv MACs (0.351 T)."""
    result = get_flops.count(get_flops.backbone_cfg('sapiens2_0.1b'))
    card_params, card_tflops = get_flops.MODEL_CARD['sapiens2_0.1b']
    assert round(result['params'] / 1e9, 3) == card_params
    assert result['linear_macs'] / 1e12 == pytest.approx(card_tflops, rel=0.03)


def test_get_flops_bare_backbone_and_task_config(capsys):
    tiny = osp.join(REPO_DIR, 'tests', 'configs', 'parity',
                    'tiny18_backbone_1k.py')
    result = get_flops.main([tiny])
    arch = Config.fromfile(tiny).model.arch
    linear, attention = _analytic_macs(arch, 128, 96)
    assert (result['linear_macs'], result['attention_macs']) == (linear,
                                                                 attention)
    assert 'params' in capsys.readouterr().out
    # a task config counts backbone + head; params equal a real build's
    from sapiens2_mm.registry import MODELS
    cfg = Config.fromfile(WORKFLOW_CFG)
    real = sum(p.numel() for p in MODELS.build(cfg.model).parameters())
    task = get_flops.count(cfg.model.to_dict(), (64, 64))
    assert task['params'] == real
    assert task['backbone_params'] < real
    b_linear, _ = _analytic_macs(cfg.model.backbone.arch, 64, 64)
    assert task['linear_macs'] > b_linear  # the FCN head adds convs


def _shipped_configs():
    from tests.tiny_variants import SHIPPED
    return [osp.relpath(p, REPO_DIR) for p in SHIPPED]


@pytest.mark.slow  # every shipped config: 90 s
@pytest.mark.parametrize('config', _shipped_configs())
def test_get_flops_runs_on_every_shipped_config(config, capsys):
    """Issue 18: every pose config failed (mmpose's forward needs
    data_samples). Each shipped config is counted on the meta device (about
    1 s, 2 s for 5B) and checked against the backbone's analytic MACs: the
    heads hold no attention, so the attention MACs are exactly the
    backbone's, and the head (or decoder) only adds linear / conv MACs."""
    result = get_flops.main([osp.join(REPO_DIR, config)])
    assert osp.basename(config) in capsys.readouterr().out
    backbone = Config.fromfile(osp.join(REPO_DIR, config)).model.backbone
    h, w = result['shape']
    linear, attention = _analytic_macs(
        backbone.arch, h, w, backbone.get('patch_size', 16),
        tokenizer=backbone.get('use_tokenizer', False))
    assert result['attention_macs'] == attention
    assert result['linear_macs'] >= linear
    assert result['flops'] == 2 * (result['linear_macs'] +
                                   result['attention_macs'])


def test_print_config_resolves_bases_and_checks_options(tmp_path, capsys):
    out = str(tmp_path / 'resolved.py')
    cfg = print_config.main([
        WORKFLOW_CFG, '--cfg-options', 'train_dataloader.batch_size=5',
        '--save-path', out
    ])
    text = capsys.readouterr().out
    assert "default_scope = 'sapiens2_mm'" in text  # from _base_
    assert 'batch_size=5' in text
    assert Config.fromfile(out).train_dataloader.batch_size == 5
    assert cfg.log_processor.by_epoch is False
    with pytest.raises(SystemExit, match="'batch_size'"):
        print_config.main(
            [WORKFLOW_CFG, '--cfg-options', 'train_dataloader.batchsize=5'])


def _write_scalars(path):
    entries = [dict(lr=0.1 * i, loss=1.0 / i, time=0.5 + 0.1 * i, iter=i,
                    step=i) for i in range(1, 5)]
    entries.insert(2, dict(mIoU=40.0, aAcc=80.0, step=0))
    entries.append(dict(mIoU=50.0, aAcc=90.0, step=0))
    with open(path, 'w') as f:
        f.write('\n'.join(json.dumps(e) for e in entries) + '\n')


def test_analyze_logs_series_plot_and_time(tmp_path):
    run = tmp_path / 'work' / '20260101_000000' / 'vis_data'
    run.mkdir(parents=True)
    _write_scalars(run / 'scalars.json')
    series = analyze_logs.load_series(str(tmp_path / 'work'))
    assert series['loss'] == ([1, 2, 3, 4], [1.0, 0.5, 1 / 3, 0.25])
    assert series['mIoU'] == ([2, 4], [40.0, 50.0])  # after iters 2 and 4
    out = str(tmp_path / 'curves.png')
    analyze_logs.main(['plot_curve', str(run / 'scalars.json'), '--keys',
                       'loss', 'mIoU', '--out', out, '--title', 'x'])
    image = cv2.imread(out)
    assert image.shape == (600, 800, 3)  # 2 subplots of 8x3 inches, 100 dpi
    assert (image < 250).any(axis=2).mean() > 0.02  # curves and axes drawn
    stats = analyze_logs.cal_train_time(str(tmp_path / 'work'))
    assert stats['mean'] == pytest.approx(0.75)
    assert stats['slowest'] == pytest.approx(0.9)
    with pytest.raises(SystemExit, match="'mAP'"):
        analyze_logs.main(['plot_curve', str(tmp_path / 'work'), '--keys',
                           'mAP', '--out', out])
    with pytest.raises(SystemExit, match='No scalars.json'):
        analyze_logs.main(['cal_train_time', str(tmp_path)])


def test_browse_dataset_seg_draws_palette_overlay(tmp_path, monkeypatch):
    data = make_data(str(tmp_path / 'data'))
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', data)
    out_dir = str(tmp_path / 'seg')
    written = browse_dataset.main([WORKFLOW_CFG, '--output-dir', out_dir,
                                   '--phase', 'val', '--max-items', '2'])
    assert len(written) == 2
    palette = np.array([[128, 128, 128], [220, 0, 0], [0, 0, 220]])
    for path in written:
        name = osp.basename(path).split('_', 1)[1]
        image = cv2.imread(osp.join(data, 'img_dir', 'val', name))[..., ::-1]
        label = cv2.imread(osp.join(data, 'ann_dir', 'val', name), 0)
        drawn = cv2.imread(path)[..., ::-1].astype(float)
        expected = 0.5 * image + 0.5 * palette[label]  # config alpha 0.5
        assert np.abs(drawn - expected).max() <= 1.0


def test_browse_dataset_pose_draws_keypoints(tmp_path):
    cfg_path = osp.join(REPO_DIR, 'configs', 'pose',
                        'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
    assert osp.isfile(cfg_path), f'shipped config missing: {cfg_path}'
    out_dir = str(tmp_path / 'pose')
    written = browse_dataset.main([cfg_path, '--output-dir', out_dir,
                                   '--phase', 'val', '--max-items', '1'])
    cfg = Config.fromfile(cfg_path)
    from sapiens2_mm.registry import DATASETS
    dataset_cfg = cfg.val_dataloader.dataset
    browse_dataset._pack_transformed(dataset_cfg)
    packed = DATASETS.build(dataset_cfg)[0]
    plain = packed['inputs'].permute(1, 2, 0).numpy()  # BGR, like the file
    drawn = cv2.imread(written[0])
    assert drawn.shape == plain.shape
    kpts = packed['data_samples'].gt_instances.transformed_keypoints[0]
    visible = packed['data_samples'].gt_instances.keypoints_visible[0] > 0.3
    h, w = plain.shape[:2]
    hits = 0
    for (x, y), vis in zip(kpts, visible):
        xi, yi = int(round(x)), int(round(y))
        if vis and 0 <= xi < w and 0 <= yi < h:
            hits += int(np.any(drawn[yi, xi] != plain[yi, xi]))
    assert hits >= 5  # keypoint discs drawn where the keypoints are


@pytest.mark.parametrize('task', DENSE_TASKS)
def test_browse_dataset_dense_draws_image_and_ground_truth(tmp_path, task):
    """Issue 18: normal / pointmap / albedo crashed in cvtColor (the seg
    visualizer got a dense sample) and left an empty folder. The drawing is
    [image | ground truth], checked against the colors computed here."""
    cfg_path = osp.join(REPO_DIR, 'configs', task,
                        'sapiens2-tiny_1xb2-30_densesample-128x96.py')
    written = browse_dataset.main([cfg_path, '--output-dir',
                                   str(tmp_path / task), '--phase', 'val',
                                   '--max-items', '2'])
    assert len(written) == 2
    from sapiens2_mm.registry import DATASETS
    cfg = Config.fromfile(cfg_path)
    packed = DATASETS.build(cfg.val_dataloader.dataset)[0]
    image = packed['inputs'].permute(1, 2, 0).numpy()  # BGR
    h, w = image.shape[:2]
    drawn = cv2.imread(written[0])
    np.testing.assert_array_equal(drawn[:h, :w], image)
    sample = packed['data_samples']

    def at_input_size(field):
        """(H, W, C) ground truth; the val pipeline keeps it at the original
        size (2x the input here), shown subsampled to the input."""
        array = field.data.float().numpy().transpose(1, 2, 0)
        step = array.shape[0] // h
        assert array.shape[:2] == (h * step, w * step)
        return array[::step, ::step]

    mask = at_input_size(sample.gt_mask)[..., 0].astype(bool)
    right = drawn[:h, w:2 * w].astype(int)
    assert mask.any() and (~mask).any()
    assert (right[~mask] == 0).all()  # no ground truth: black
    if task == 'normal':
        n = at_input_size(sample.gt_normal)
        expected = np.round((n + 1) / 2 * 255)[..., ::-1]
    elif task == 'albedo':
        a = at_input_size(sample.gt_albedo)
        expected = np.round(np.clip(a, 0, 1) * 255)[..., ::-1]
    else:  # depth: inverse depth, turbo; near red / far blue in BGR
        depth = at_input_size(sample.gt_depth)[..., 0]
        near = depth[mask] <= np.percentile(depth[mask], 5)
        far = depth[mask] >= np.percentile(depth[mask], 95)
        assert right[mask][near][:, 2].mean() > right[mask][near][:, 0].mean()
        assert right[mask][far][:, 0].mean() > right[mask][far][:, 2].mean()
        assert drawn.shape[0] > h  # the depth legend strip below
        return
    assert np.abs(right[mask] - expected[mask]).max() <= 1


def test_browse_dataset_pretraining_draws_every_view(tmp_path):
    """Issue 18: pretraining configs crashed ('list' object has no attribute
    'permute'): a sample is a list of views, drawn in one row."""
    cfg_path = osp.join(REPO_DIR, 'configs', 'pretrain',
                        'sapiens2-tiny_pretrain-cpu-64x48.py')
    written = browse_dataset.main([cfg_path, '--output-dir',
                                   str(tmp_path / 'pre'), '--max-items', '2'])
    assert len(written) == 2
    from sapiens2_mm.registry import DATASETS
    cfg = Config.fromfile(cfg_path)
    views = DATASETS.build(cfg.train_dataloader.dataset)[0]['inputs']
    shapes = [tuple(v.shape[1:]) for v in views]
    gap = browse_dataset.VIEW_GAP
    width = sum(w for _, w in shapes) + gap * (len(shapes) - 1)
    for path in written:
        assert cv2.imread(path).shape == (max(h for h, _ in shapes), width, 3)
    # the row itself: views side by side, top-aligned, black between
    import torch
    a = torch.full((3, 4, 3), 10, dtype=torch.uint8)
    b = torch.full((3, 2, 2), 200, dtype=torch.uint8)
    row = browse_dataset.draw_views({'inputs': [a, b]})
    assert row.shape == (4, 3 + gap + 2, 3)
    assert (row[:, :3] == 10).all() and (row[:, 3:3 + gap] == 0).all()
    assert (row[:2, 3 + gap:] == 200).all() and (row[2:, 3 + gap:] == 0).all()


def test_analyze_logs_joins_the_runs_of_a_resumed_work_dir(tmp_path):
    """Run A logged iterations 1-5 and crashed; the resume from iter_4 logged
    5-6. The curve is 1-6 with iteration 5 from the resumed run."""
    def write(stamp, entries):
        run = tmp_path / 'work' / stamp / 'vis_data'
        run.mkdir(parents=True)
        (run / 'scalars.json').write_text(
            '\n'.join(json.dumps(e) for e in entries) + '\n')

    def train(i, loss):
        return dict(loss=loss, time=0.5, iter=i, step=i)

    write('20260101_000000', [
        train(1, 1.0), train(2, 0.9), dict(mIoU=10.0, step=0), train(3, 0.8),
        train(4, 0.7), dict(mIoU=20.0, step=0), train(5, 0.66)])
    write('20260101_010000', [
        train(5, 0.6), train(6, 0.5), dict(mIoU=30.0, step=0)])
    series = analyze_logs.load_series(str(tmp_path / 'work'))
    assert series['loss'] == ([1, 2, 3, 4, 5, 6],
                              [1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert series['mIoU'] == ([2, 4, 6], [10.0, 20.0, 30.0])
    # A single file is still read on its own.
    only = tmp_path / 'work' / '20260101_010000' / 'vis_data' / 'scalars.json'
    assert analyze_logs.load_series(str(only))['loss'][0] == [5, 6]


@pytest.mark.parametrize('config', [
    'configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py',
    'configs/seg/sapiens2-0.4b_8xb12-20k_seg29-1024x768.py'])
def test_benchmark_cpu_stages_counts_every_item(config, capsys, monkeypatch):
    import sys
    monkeypatch.chdir(REPO_DIR)
    monkeypatch.syspath_prepend(ANALYSIS)
    sys.modules.pop('benchmark_inference', None)
    stages = _tool('benchmark_cpu_stages')
    rates = stages.main([config, '--upscale', '320', '240', '--copies', '1',
                         '--workers', '1', '3', '--rounds', '1'])
    out = capsys.readouterr().out
    assert set(rates) == {(s, w) for s in ('read', 'draw') for w in (1, 3)}
    assert all(r > 0 for r in rates.values())
    # pose: the 14 COCO people of the 4 photos; seg: one item per photo
    items = 14 if '/pose/' in config else 4
    assert f'4 photos (320x240), {items} prepared items' in out
    assert out.count('decode + prepare') == 2
    assert out.count('draw + encode') == 2


def test_all_archs_table_in_the_docs_is_the_tools_output():
    """docs/train_test.md shows `get_flops.py --all-archs`, 4K row included
    (the docs round the card's 1.26 as 1.260)."""
    table = get_flops.all_archs_table().splitlines()[2:]
    assert len(table) == len(get_flops.MODEL_CARD)
    with open(osp.join(REPO_DIR, 'docs', 'train_test.md')) as f:
        docs = f.read()
    for row in table:
        cells = [c.strip() for c in row.strip('|').split('|')]
        documented = [line for line in docs.splitlines()
                      if line.startswith(f'| {cells[0]} |')]
        assert len(documented) == 1, cells[0]
        doc_cells = [c.strip() for c in documented[0].strip('|').split('|')]
        assert doc_cells[:5] == cells[:5]
        assert doc_cells[5] == cells[5] or float(doc_cells[5]) == float(
            cells[5])
    assert table[-1].startswith('| sapiens2_1b_4k (4096x3072) | '
                                '1,606,588,928 | 1.607 | 27.197 | 12.421 | - |')
