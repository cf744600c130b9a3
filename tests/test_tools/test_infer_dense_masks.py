"""Foreground masks of the dense tasks (--seg-dir, --fg-seg), float16
arrays and the automatic .ply step (issue 20 item 2, issue 18 item 22)."""
import json
import os.path as osp

import cv2
import infer
import numpy as np
import pytest
import torch

from sapiens2_mm.apis import build_inferencer
from sapiens2_mm.apis.tasks.pointmap import PLY_MAX_POINTS, auto_ply_step
from tests.conftest import DATA_DIR
from tests.test_apis.tiny_configs import tiny_config, tiny_model
from tests.test_tools.test_infer_dense import _checkpoint, _read_ply

SAMPLE = osp.join(DATA_DIR, 'dense_sample')
SIZE = (160, 120)  # (W, H) of the test photos


# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _mask(i):
    mask = cv2.imread(osp.join(SAMPLE, 'mask', f'scene_0000{i}.png'))
    return cv2.resize(mask, SIZE, interpolation=cv2.INTER_NEAREST)[..., 0] > 0


@pytest.fixture(scope='module')
def photos(tmp_path_factory):
    """Photos a-e (120x160) and a mask folder: a has <stem>_seg.npy class
    labels (0 = background), b a boolean <stem>.npy, c a PNG of its own
    file name, d none, e a mask of another size."""
    root = tmp_path_factory.mktemp('masks')
    inputs, seg = root / 'in', root / 'seg'
    inputs.mkdir()
    seg.mkdir()
    for i, name in enumerate('abcde'):
        img = cv2.imread(osp.join(SAMPLE, 'rgb', f'scene_0000{i % 3}.png'))
        cv2.imwrite(str(inputs / f'{name}.png'), cv2.resize(img, SIZE))
    labels = _mask(0).astype(np.uint8) * 7  # class 7 on the person
    np.save(seg / 'a_seg.npy', labels)
    np.save(seg / 'b.npy', _mask(1))
    png = np.zeros((120, 160, 3), np.uint8)
    png[..., 2] = _mask(2) * 200  # a red mask: any channel > 0 is foreground
    cv2.imwrite(str(seg / 'c.png'), png)
    np.save(seg / 'e.npy', np.ones((60, 80), bool))
    return inputs, seg


def _run(task, ckpt, *extra):
    return infer.main([task, tiny_config(task), ckpt, '--batch-size', '2',
                       *extra])


def _records(out):
    with open(out / 'inference_index.jsonl') as f:
        lines = [json.loads(line) for line in f]
    return {r['name']: r for r in lines[1:] if 'name' in r}


def test_normal_seg_dir_formats_missing_and_wrong_size(photos, tmp_path,
                                                       capsys):
    inputs, seg = photos
    _, ckpt = _checkpoint('normal', tmp_path / 'n.pth')
    out = tmp_path / 'masked'
    assert _run('normal', ckpt, '--input', str(inputs), '--output', str(out),
                '--seg-dir', str(seg)) == 0
    log = capsys.readouterr().out
    # d: no mask -> warned, counted, whole frame; e: wrong size -> that
    # photo fails with a clear error, the others go on
    assert '1 frame(s) had none and used the whole frame: d.png' in log
    assert 'failed 1 frame(s)' in log and 'e.png' in log
    assert 'is 60x80 but the photo e.png is 120x160' in log
    records = _records(out)
    assert sorted(records) == ['a.png', 'b.png', 'c.png', 'd.png']
    assert records['a.png']['frame']['foreground'] == 'seg_dir'
    assert records['d.png']['frame']['foreground'] == 'missing'
    plain = tmp_path / 'plain'
    assert _run('normal', ckpt, '--input', str(inputs), '--output',
                str(plain)) == 0
    for i, name in enumerate('abc'):
        mask = _mask(i)
        assert 0.05 < mask.mean() < 0.95
        # arrays unmasked: equal to a run without masks
        normal = np.load(out / f'{name}_normal.npy')
        np.testing.assert_array_equal(normal,
                                      np.load(plain / f'{name}_normal.npy'))
        colors = ((normal + 1) / 2 * 255).astype(np.uint8)[..., ::-1]
        vis = cv2.imread(str(out / f'{name}.png'))[:120, 160:]
        png = cv2.imread(str(out / f'{name}_normal.png'))
        for drawing in (vis, png):  # background black (official)
            assert (drawing[~mask] == 0).all()
            np.testing.assert_array_equal(drawing[mask], colors[mask])
    vis = cv2.imread(str(out / 'd.png'))
    np.testing.assert_array_equal(vis, cv2.imread(str(plain / 'd.png')))
    # --background photo: the photo shows outside the foreground
    photo_bg = tmp_path / 'photo_bg'
    assert _run('normal', ckpt, '--input', str(inputs / 'a.png'), '--output',
                str(photo_bg), '--seg-dir', str(seg), '--background',
                'photo') == 0
    image = cv2.imread(str(inputs / 'a.png'))
    vis = cv2.imread(str(photo_bg / 'a.png'))[:120, 160:]
    mask = _mask(0)
    np.testing.assert_array_equal(vis[~mask], image[~mask])


def test_pointmap_ply_and_depth_honour_the_mask(photos, tmp_path):
    inputs, seg = photos
    _, ckpt = _checkpoint('pointmap', tmp_path / 'p.pth')
    out = tmp_path / 'p'
    assert _run('pointmap', ckpt, '--input', str(inputs / 'b.png'),
                '--output', str(out), '--seg-dir', str(seg)) == 0
    mask = _mask(1)
    points = np.load(out / 'b_pointmap.npy')
    valid = np.isfinite(points).all(2) & (points[..., 2] > 0)
    xyz, rgb = _read_ply(out / 'b.ply')
    keep = valid & mask
    assert 0 < len(xyz) == keep.sum() < valid.sum()
    np.testing.assert_array_equal(xyz, points[keep])
    image = cv2.imread(str(inputs / 'b.png'))
    np.testing.assert_array_equal(rgb, image[..., ::-1][keep])
    depth_png = cv2.imread(str(out / 'b_depth.png'))
    assert (depth_png[~mask] == 100).all()  # official grey background
    with open(out / 'pointmap_cameras.json') as f:
        cam = json.load(f)['frames'][0]
    depth = points[..., 2]
    near = np.clip(np.percentile(depth[keep], 1), 0.1, 250)
    assert cam['depth_range_m'][0] == pytest.approx(near)
    assert cam['num_points'] == keep.sum() and cam['ply_step'] == 1


def _seg_checkpoint(path):
    """A tiny seg model whose labels are 0 (background) where one random
    projection of the features is positive, else 1."""
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(tiny_config('seg')).model)
    model.init_weights()
    conv = model.decode_head.conv_seg
    with torch.no_grad():
        conv.weight[1:] = 0
        conv.bias[:] = -100.0
        conv.bias[0] = 0.0
        conv.bias[1] = 0.0
    torch.save({'state_dict': model.state_dict()}, str(path))
    return str(path)


def test_fg_seg_in_the_same_pass_and_each_photo_decoded_once(
        photos, tmp_path, monkeypatch):
    """docs/inference.md: pointmap --fg-seg SEG_CONFIG SEG_CKPT."""
    from sapiens2_mm.apis import inputs as inputs_module
    inputs, _ = photos
    seg_ckpt = _seg_checkpoint(tmp_path / 'seg.pth')
    _, ckpt = _checkpoint('pointmap', tmp_path / 'p.pth')
    decoded = []
    read = inputs_module.read_image
    monkeypatch.setattr(inputs_module, 'read_image',
                        lambda path: decoded.append(path) or read(path))
    out = tmp_path / 'fg'
    assert _run('pointmap', ckpt, '--input', str(inputs / 'a.png'),
                str(inputs / 'b.png'), '--output', str(out), '--fg-seg',
                tiny_config('seg'), seg_ckpt) == 0
    assert sorted(osp.basename(p) for p in decoded) == ['a.png', 'b.png']
    seg = build_inferencer(tiny_model('seg', seg_ckpt))
    for name in ('a', 'b'):
        image = cv2.imread(str(inputs / f'{name}.png'))
        expected = seg(image)[0].label_map > 0
        assert 0.02 < expected.mean() < 0.98
        written = cv2.imread(str(out / f'{name}_fg.png'),
                             cv2.IMREAD_UNCHANGED)
        np.testing.assert_array_equal(written > 0, expected)
        depth_png = cv2.imread(str(out / f'{name}_depth.png'))
        assert (depth_png[~expected] == 100).all()  # grey 100
        points = np.load(out / f'{name}_pointmap.npy')
        keep = expected & np.isfinite(points).all(2) & (points[..., 2] > 0)
        xyz, _ = _read_ply(out / f'{name}.ply')
        np.testing.assert_array_equal(xyz, points[keep])
    assert _records(out)['a.png']['frame']['foreground'] == 'fg_seg'
    with pytest.raises(ValueError, match='--seg-dir and --fg-seg'):
        _run('pointmap', ckpt, '--input', str(inputs / 'a.png'), '--output',
             str(tmp_path / 'both'), '--seg-dir', str(tmp_path), '--fg-seg',
             tiny_config('seg'), seg_ckpt)


def test_python_api_masks(photos):
    inputs, seg = photos
    model = tiny_model('normal')
    result = build_inferencer(model, seg_dir=str(seg))(
        [str(inputs / 'b.png')])[0]
    np.testing.assert_array_equal(result.foreground, _mask(1))
    assert result.foreground_source == 'seg_dir'
    plain = build_inferencer(model)([str(inputs / 'b.png')])[0]
    assert plain.foreground is None and plain.foreground_source is None
    np.testing.assert_array_equal(plain.normal, result.normal)
    with pytest.raises(NotADirectoryError, match='--seg-dir'):
        build_inferencer(model, seg_dir=str(inputs / 'nothing'))
    # the same check as the CLI's: one mask source at most
    with pytest.raises(ValueError, match='--seg-dir and --fg-seg'):
        build_inferencer(model, seg_dir=str(seg), fg_seg=model)


def test_float16_arrays(photos, tmp_path):
    """docs/inference.md: pointmap --array-dtype float16 --ply-step auto."""
    inputs, _ = photos
    _, ckpt = _checkpoint('pointmap', tmp_path / 'p.pth')
    full, half = tmp_path / 'f32', tmp_path / 'f16'
    for out, extra in ((full, []), (half, ['--array-dtype', 'float16',
                                           '--ply-step', 'auto'])):
        assert _run('pointmap', ckpt, '--input', str(inputs / 'a.png'),
                    '--output', str(out), '--no-vis', *extra) == 0
    for suffix in ('_pointmap.npy', '_depth.npy'):
        f32 = np.load(full / f'a{suffix}')
        f16 = np.load(half / f'a{suffix}')
        assert f32.dtype == np.float32 and f16.dtype == np.float16
        np.testing.assert_array_equal(f16, f32.astype(np.float16))
        assert osp.getsize(half / f'a{suffix}') < 0.6 * osp.getsize(
            full / f'a{suffix}')


@pytest.mark.parametrize('shape,step', [((120, 160), 1), ((2000, 2000), 1),
                                        ((2001, 2000), 2),
                                        ((6000, 8000), 4)])
def test_auto_ply_step_keeps_at_most_the_limit(shape, step):
    h, w = shape

    def points(s):
        return -(-h // s) * -(-w // s)

    assert auto_ply_step(h, w) == step
    assert points(step) <= PLY_MAX_POINTS
    assert step == 1 or points(step - 1) > PLY_MAX_POINTS


def test_seg_run_then_dense_seg_dir(photos, tmp_path):
    """docs/inference.md: a seg run's folder as --seg-dir of a dense run (its
    <stem>_seg.npy label maps; the seg drawings there are not masks)."""
    inputs, _ = photos
    seg_ckpt = _seg_checkpoint(tmp_path / 'seg.pth')
    seg_out = tmp_path / 'seg'
    assert infer.main(['seg', tiny_config('seg'), seg_ckpt, '--input',
                       str(inputs / 'a.png'), '--output', str(seg_out)]) == 0
    assert osp.isfile(seg_out / 'a.png')  # the drawing, named as the photo
    labels = np.load(seg_out / 'a_seg.npy')
    _, ckpt = _checkpoint('normal', tmp_path / 'n.pth')
    out = tmp_path / 'normal'
    assert _run('normal', ckpt, '--input', str(inputs / 'a.png'), '--output',
                str(out), '--seg-dir', str(seg_out)) == 0
    mask = labels > 0
    assert 0.02 < mask.mean() < 0.98
    vis = cv2.imread(str(out / 'a.png'))[:120, 160:]
    assert (vis[~mask] == 0).all() and (vis[mask] != 0).any(axis=-1).all()


def test_other_dense_options_never_mix_in_one_folder(photos, tmp_path):
    """Post-processing and mask options are in the index header: the same
    options continue a run, other ones are refused (no mixed folder)."""
    inputs, seg = photos
    _, ckpt = _checkpoint('normal', tmp_path / 'n.pth')
    out = tmp_path / 'out'
    args = ['--input', str(inputs / 'a.png'), '--output', str(out)]
    assert _run('normal', ckpt, *args, '--normalize', 'after_resize') == 0
    assert _run('normal', ckpt, *args, '--normalize', 'after_resize') == 0
    with pytest.raises(FileExistsError, match='dense_options'):
        _run('normal', ckpt, *args)
    with pytest.raises(FileExistsError, match='dense_options'):
        _run('normal', ckpt, *args, '--normalize', 'after_resize',
             '--seg-dir', str(seg))
    normal = np.load(out / 'a_normal.npy')
    np.testing.assert_allclose(np.linalg.norm(normal, axis=2), 1, atol=1e-5)


VOC_PALETTE = [0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0]  # indices 0-3


def test_palette_and_red_masks_are_read_by_index_and_any_channel(
        photos, tmp_path, capsys):
    """A VOC-style palette PNG (index 1 = (128, 0, 0)) and a red RGB mask
    were read as all background (OpenCV's channel 0 is blue): every drawing
    all background, every .ply empty, no word of it."""
    from PIL import Image

    from sapiens2_mm.apis.mask_sources import read_mask_file
    inputs, _ = photos
    seg = tmp_path / 'seg'
    seg.mkdir()
    palette = Image.fromarray(_mask(0).astype(np.uint8) * 1, mode='P')
    palette.putpalette(VOC_PALETTE)
    palette.save(seg / 'a.png')
    red = np.zeros((120, 160, 3), np.uint8)
    red[_mask(1)] = (0, 0, 255)  # BGR: pure red
    cv2.imwrite(str(seg / 'b.png'), red)
    assert Image.open(seg / 'a.png').mode == 'P'
    np.testing.assert_array_equal(read_mask_file(str(seg / 'a.png')),
                                  _mask(0))
    np.testing.assert_array_equal(read_mask_file(str(seg / 'b.png')),
                                  _mask(1))
    _, ckpt = _checkpoint('pointmap', tmp_path / 'p.pth')
    out = tmp_path / 'out'
    assert _run('pointmap', ckpt, '--input', str(inputs / 'a.png'),
                str(inputs / 'b.png'), '--output', str(out), '--seg-dir',
                str(seg)) == 0
    assert 'covering' not in capsys.readouterr().out
    for i, name in enumerate('ab'):
        points = np.load(out / f'{name}_pointmap.npy')
        keep = _mask(i) & np.isfinite(points).all(2) & (points[..., 2] > 0)
        xyz, _ = _read_ply(out / f'{name}.ply')
        assert 0 < len(xyz) == keep.sum()


def test_empty_full_and_self_masks_are_warned(photos, tmp_path, capsys):
    """A mask covering 0 % or 100 % of its photo is warned about and listed;
    --seg-dir pointing at the inputs never reads a photo as its own mask."""
    inputs, _ = photos
    seg = tmp_path / 'seg'
    seg.mkdir()
    np.save(seg / 'a.npy', np.zeros((120, 160), bool))
    np.save(seg / 'b.npy', np.ones((120, 160), bool))
    _, ckpt = _checkpoint('normal', tmp_path / 'n.pth')
    out = tmp_path / 'out'
    assert _run('normal', ckpt, '--input', str(inputs / 'a.png'),
                str(inputs / 'b.png'), str(inputs / 'c.png'), '--output',
                str(out), '--seg-dir', str(seg)) == 0
    log = capsys.readouterr().out
    assert ('2 frame(s) had a mask covering 0 % or 100 % of the photo: '
            'a.png (0 %), b.png (100 %)') in log
    # the input folder as --seg-dir: c.png is not its own mask
    out = tmp_path / 'self'
    assert _run('normal', ckpt, '--input', str(inputs / 'c.png'), '--output',
                str(out), '--seg-dir', str(inputs)) == 0
    log = capsys.readouterr().out
    assert '1 frame(s) had none and used the whole frame: c.png' in log
    assert _records(out)['c.png']['frame']['foreground'] == 'missing'
