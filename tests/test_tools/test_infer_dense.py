"""tools/infer.py normal | pointmap | albedo: every output format read back.

The tiny configs run with seeded random weights (the pointmap scale MLP is
set to output s = 2 exactly, so the focal length has a known value). The
.ply files are parsed here from their header, without the package's code.
"""
import json
import os
import os.path as osp

import cv2
import infer
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import DATA_DIR
from tests.test_apis.tiny_configs import tiny_config
from tests.test_models.test_heads.test_dense_postprocess_order import gaussian3

DENSE = osp.join(DATA_DIR, 'dense_sample', 'rgb')
SCALE = 2.0  # the pointmap scale the fixture's checkpoint predicts


# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    """Two 120x160 images (letterboxed by r = 0.6 into 128x96), an
    unreadable file and a 3-frame 128x96 video (r = 1)."""
    folder = tmp_path_factory.mktemp('dense_in')
    for name in ('scene_00000.png', 'scene_00001.png'):
        img = cv2.imread(osp.join(DENSE, name))
        cv2.imwrite(str(folder / name), cv2.resize(img, (160, 120)))
    (folder / 'broken.png').write_bytes(b'\x89PNG broken')
    writer = cv2.VideoWriter(str(folder / 'clip.mp4'),
                             cv2.VideoWriter_fourcc(*'mp4v'), 4.0, (96, 128))
    for i in range(3):
        writer.write(np.full((128, 96, 3), 40 + 60 * i, np.uint8))
    writer.release()
    return folder


def _checkpoint(task, path):
    """Seeded random weights of the tiny config, saved as an mmengine .pth."""
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(tiny_config(task)).model)
    model.init_weights()
    if task == 'pointmap':
        last = model.decode_head.scale_final_layer[-1]
        with torch.no_grad():
            last.weight.zero_()
            last.bias.fill_(SCALE)
    torch.save({'state_dict': model.state_dict()}, str(path))
    return model.eval(), str(path)


def _run(task, inputs, out, ckpt, *extra):
    rc = infer.main([task, tiny_config(task), ckpt, '--input', str(inputs),
                     '--output', str(out), '--batch-size', '2', *extra])
    assert rc == 0


def _network_output(model, image):
    """The official demo steps written out up to the network: letterbox
    160x120 -> 96x72 in 128x96 (28 rows of padding above and below),
    normalize, forward. Returns the (1, 3, 128, 96) map."""
    small = cv2.resize(np.ascontiguousarray(image), (96, 72),
                       interpolation=cv2.INTER_LINEAR)
    canvas = np.zeros((128, 96, 3), np.uint8)
    canvas[28:100] = small
    rgb = canvas[..., ::-1].astype(np.float32)
    mean = np.array([123.675, 116.28, 103.53], np.float32)
    std = np.array([58.395, 57.12, 57.375], np.float32)
    x = torch.from_numpy(((rgb - mean) / std).transpose(2, 0, 1))[None]
    with torch.no_grad():
        out = model(x, None, mode='tensor')
    return out[0] if isinstance(out, tuple) else out


def _to_photo(net_map, smooth=False):
    """Crop the letterbox and resize bilinearly to 120x160 (after the
    official pointmap demo's 4 Gaussian blurs when ``smooth``, written in
    numpy in test_dense_postprocess_order). Returns (3, 120, 160)."""
    out = net_map[:, :, 28:100]
    if smooth:  # 72x96 -> 120x160 is an enlargement
        blurred = out[0].double().numpy()
        for _ in range(4):
            blurred = gaussian3(blurred)
        out = torch.from_numpy(blurred).float()[None]
    return F.interpolate(out, size=(120, 160), mode='bilinear',
                         align_corners=False)[0].numpy()


def _unit(normal):
    return normal / normal.norm(dim=1, keepdim=True).clamp(min=1e-8)


def test_normal_outputs_read_back(inputs, tmp_path, capsys):
    model, ckpt = _checkpoint('normal', tmp_path / 'normal.pth')
    out = tmp_path / 'normal_out'
    _run('normal', inputs, out, ckpt)
    log = capsys.readouterr().out
    assert 'skipped 1 unreadable input(s)' in log and 'broken.png' in log
    image = cv2.imread(str(inputs / 'scene_00000.png'))
    normal = np.load(out / 'scene_00000_normal.npy')
    assert normal.shape == (120, 160, 3) and normal.dtype == np.float32
    # the official order: unit length at network resolution, then crop and
    # resize, not re-normalized (lengths <= 1 between network pixels)
    assert np.linalg.norm(normal, axis=2).max() <= 1 + 1e-5
    expected = _to_photo(_unit(_network_output(model, image))).transpose(
        1, 2, 0)
    np.testing.assert_allclose(normal, expected, atol=1e-4)
    # the colored normals: (n + 1) / 2 * 255 truncated, x -> red
    png = cv2.imread(str(out / 'scene_00000_normal.png'))[..., ::-1]
    np.testing.assert_array_equal(png, ((normal + 1) / 2 * 255).astype(
        np.uint8))
    vis = cv2.imread(str(out / 'scene_00000.png'))
    # [image | normals] and the normal color key (24 rows) under them
    assert vis.shape == (120 + 24, 320, 3)
    assert np.abs(vis[:120, :160].astype(int) - image).max() == 0
    assert np.abs(vis[:120, 160:].astype(int) - png[..., ::-1]).max() == 0
    for i in range(3):  # video frames: data files per frame, one video
        assert np.load(out / f'clip_{i:06d}_normal.npy').shape == (128, 96, 3)
    cap = cv2.VideoCapture(str(out / 'clip.mp4'))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
    cap.release()
    # a second run finds every frame done and overwrites nothing
    before = {n: os.stat(out / n).st_mtime_ns for n in os.listdir(out)}
    _run('normal', inputs, out, ckpt)
    assert 'finished by an earlier run were skipped' in \
        capsys.readouterr().out
    after = {n: os.stat(out / n).st_mtime_ns for n in before
             if n != 'inference_index.jsonl'}
    assert all(before[n] == t for n, t in after.items())


def _read_ply(path):
    """Parse a binary little-endian PLY of float x, y, z + uchar r, g, b."""
    with open(path, 'rb') as f:
        data = f.read()
    end = data.index(b'end_header\n') + len(b'end_header\n')
    header = data[:end].decode('ascii').splitlines()
    assert header[0] == 'ply'
    assert header[1] == 'format binary_little_endian 1.0'
    count = int([h for h in header if h.startswith('element vertex')][0]
                .split()[-1])
    props = [h.split()[1:] for h in header if h.startswith('property')]
    assert props == [['float', 'x'], ['float', 'y'], ['float', 'z'],
                     ['uchar', 'red'], ['uchar', 'green'], ['uchar', 'blue']]
    assert not any(h.startswith('element face') for h in header)
    body = np.frombuffer(data[end:], np.uint8).reshape(count, 15)
    xyz = body[:, :12].copy().view('<f4').reshape(count, 3)
    return xyz, body[:, 12:]


def test_pointmap_outputs_read_back(inputs, tmp_path):
    model, ckpt = _checkpoint('pointmap', tmp_path / 'pointmap.pth')
    out = tmp_path / 'pointmap_out'
    _run('pointmap', inputs, out, ckpt)
    image = cv2.imread(str(inputs / 'scene_00001.png'))
    points = np.load(out / 'scene_00001_pointmap.npy')
    depth = np.load(out / 'scene_00001_depth.npy')
    assert points.shape == (120, 160, 3) and depth.shape == (120, 160)
    np.testing.assert_array_equal(depth, points[..., 2])
    # official order: metric at network resolution, crop, blur (the photo is
    # larger than the prediction), resize
    expected = _to_photo(_network_output(model, image) / SCALE, smooth=True)
    np.testing.assert_allclose(points, expected.transpose(1, 2, 0),
                               atol=1e-4)
    # focal length f = 768 / (s r): r = 0.6 for the images, 1 for the video
    with open(out / 'pointmap_cameras.json') as f:
        cams = {fr['image_name']: fr for fr in json.load(f)['frames']}
    assert sorted(cams) == ['clip_000000.jpg', 'clip_000001.jpg',
                            'clip_000002.jpg', 'scene_00000.png',
                            'scene_00001.png']
    cam = cams['scene_00001.png']
    assert cam['focal_length_px'] == pytest.approx(768 / (SCALE * 0.6))
    assert cams['clip_000001.jpg']['focal_length_px'] == pytest.approx(
        768 / SCALE)
    assert cam['canonical_scale'] == pytest.approx(SCALE)
    assert cam['image_size'] == [120, 160]
    # depth colors: turbo of the inverse depth between the 1st and 99th
    # percentiles of the valid depth (clamped to [0.1, 250] m)
    valid = np.isfinite(depth) & (depth > 0)
    near, far = np.clip(np.percentile(depth[valid], [1, 99]), 0.1, 250)
    assert cam['depth_range_m'] == pytest.approx([near, far])
    png = cv2.imread(str(out / 'scene_00001_depth.png'))
    turbo = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[None],
                              cv2.COLORMAP_TURBO)[0]
    assert (png[valid & (depth <= near)] == turbo[255]).all()
    assert (png[valid & (depth >= far)] == turbo[0]).all()
    assert (png[~valid] == 0).all()
    # the point cloud: every valid pixel in row-major order, image colors
    xyz, rgb = _read_ply(out / 'scene_00001.ply')
    keep = np.isfinite(points).all(2) & (points[..., 2] > 0)
    assert len(xyz) == cam['num_points'] == keep.sum() > 0
    np.testing.assert_array_equal(xyz, points[keep])
    np.testing.assert_array_equal(rgb, image[..., ::-1][keep])
    # visualization: [image | depth colors] over a range legend strip
    vis = cv2.imread(str(out / 'scene_00001.png'))
    assert vis.shape == (120 + 24, 320, 3)
    assert np.abs(vis[:120, 160:].astype(int) - png).max() == 0


def test_pointmap_ply_step_and_its_error(inputs, tmp_path, capsys):
    _, ckpt = _checkpoint('pointmap', tmp_path / 'pointmap.pth')
    for bad in ('0', 'x'):
        with pytest.raises(SystemExit):
            _run('pointmap', inputs, tmp_path / 'bad', ckpt, '--ply-step',
                 bad)
        assert f"--ply-step: must be 'auto' or an integer >= 1, got " \
            f"'{bad}'" in capsys.readouterr().err
    out = tmp_path / 'step'
    _run('pointmap', inputs / 'scene_00000.png', out, ckpt, '--ply-step',
         '4', '--no-vis')
    xyz, _ = _read_ply(out / 'scene_00000.ply')
    points = np.load(out / 'scene_00000_pointmap.npy')[::4, ::4]
    assert len(xyz) == (points[..., 2] > 0).sum() <= 30 * 40
    assert not osp.exists(out / 'scene_00000.png')


def test_pointmap_nonpositive_scale_frames_are_skipped(inputs, tmp_path,
                                                      capsys):
    model, _ = _checkpoint('pointmap', tmp_path / 'p.pth')
    with torch.no_grad():
        model.decode_head.scale_final_layer[-1].bias.fill_(-1.0)
    ckpt = str(tmp_path / 'negative.pth')
    torch.save({'state_dict': model.state_dict()}, ckpt)
    rc = infer.main(['pointmap', tiny_config('pointmap'), ckpt, '--input',
                     str(inputs / 'scene_00000.png'), '--output',
                     str(tmp_path / 'neg')])
    assert rc == 1  # nothing processed
    log = capsys.readouterr().out
    assert 'failed 1 frame(s)' in log and 'canonical scale of -1.0' in log


def test_albedo_outputs_read_back(inputs, tmp_path):
    model, ckpt = _checkpoint('albedo', tmp_path / 'albedo.pth')
    out = tmp_path / 'albedo_out'
    _run('albedo', inputs, out, ckpt, '--flip-test')
    image = cv2.imread(str(inputs / 'scene_00000.png'))
    albedo = np.load(out / 'scene_00000_albedo.npy')
    assert albedo.shape == (120, 160, 3) and albedo.dtype == np.float32
    assert albedo.min() >= 0 and albedo.max() <= 1
    # flip test: mean of the map and the un-mirrored map of the mirror
    # official order: the flip-averaged raw map clamped at network
    # resolution, then cropped and resized
    plain = _network_output(model, image)
    mirror = _network_output(model, image[:, ::-1].copy()).flip(-1)
    expected = _to_photo(((plain + mirror) / 2).clamp(0, 1))
    np.testing.assert_allclose(albedo, expected.transpose(1, 2, 0),
                               atol=1e-4)
    png = cv2.imread(str(out / 'scene_00000_albedo.png'))[..., ::-1]
    np.testing.assert_array_equal(png, (albedo * 255).astype(np.uint8))
    vis = cv2.imread(str(out / 'scene_00000.png'))
    assert vis.shape == (120, 320, 3)
