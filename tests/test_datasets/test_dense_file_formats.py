"""Dense ground truth from common file formats (docs/custom_data.md): PNG /
EXR normal maps in a stated convention, 16-bit PNG and EXR depth, 16-bit
albedo, datasets without mask files. Every file here is written from the
bundled sample's exact arrays; what is read back must equal them (up to the
quantization of the format)."""
import glob
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest

from sapiens2_mm.datasets.dense.transforms.loading import (
    DenseFileError,
    read_albedo,
    read_depth,
    read_normal,
)
from sapiens2_mm.registry import DATASETS
from tests.conftest import DATA_DIR

DENSE = osp.join(DATA_DIR, 'dense_sample')
SCENE = 'scene_00001'


def _normals():
    return np.load(osp.join(DENSE, 'normal', SCENE + '.npz'))['normal']


def _write_rgb(path, rgb):
    assert cv2.imwrite(str(path), np.ascontiguousarray(rgb[..., ::-1]))


@pytest.mark.parametrize('convention,signs', [
    ('opencv', (1, 1, 1)), ('opencv_away', (-1, -1, -1)),
    ('opengl', (1, -1, -1))])
@pytest.mark.parametrize('bits', [8, 16])
def test_png_normal_maps_in_each_convention(tmp_path, convention, signs,
                                            bits):
    """A file in ``convention`` (the sample's normals with the convention's
    signs), encoded c = (n + 1) / 2, reads back as the sample's normals."""
    normal = _normals()
    stored = normal * np.asarray(signs, np.float32)
    top = 255 if bits == 8 else 65535
    codes = np.round((stored + 1) / 2 * top).astype(
        np.uint8 if bits == 8 else np.uint16)
    path = tmp_path / 'n.png'
    _write_rgb(path, codes)
    read = read_normal(str(path), convention)
    # one quantization step of 2 / top per component
    np.testing.assert_allclose(read, normal, atol=1.0 / top + 1e-6)


def test_exr_normals_only_with_opencv_switch(tmp_path, monkeypatch):
    normal = _normals()
    monkeypatch.setenv('OPENCV_IO_ENABLE_OPENEXR', '1')
    path = tmp_path / 'n.exr'
    _write_rgb(path, normal.astype(np.float32))
    np.testing.assert_array_equal(read_normal(str(path)), normal)
    monkeypatch.delenv('OPENCV_IO_ENABLE_OPENEXR')
    with pytest.raises(DenseFileError, match='OPENCV_IO_ENABLE_OPENEXR=1'):
        read_normal(str(path))


def test_jpeg_normals_and_unknown_convention_refused(tmp_path):
    path = tmp_path / 'n.jpg'
    _write_rgb(path, np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(DenseFileError, match='JPEG'):
        read_normal(str(path))
    with pytest.raises(ValueError, match="'opengl'"):
        read_normal(str(path), 'directx')


def test_16bit_png_and_exr_depth(tmp_path, monkeypatch):
    depth = np.load(osp.join(DENSE, 'depth', SCENE + '.npy'))
    assert depth.max() < 65.535  # fits millimetres in 16 bits
    mm = np.round(depth * 1000).astype(np.uint16)
    path = tmp_path / 'd.png'
    assert cv2.imwrite(str(path), mm)
    read = read_depth(str(path), depth_scale=1000)
    np.testing.assert_allclose(read, depth, atol=0.5e-3 + 1e-6)
    assert (read[depth == 0] == 0).all()  # 0 stays invalid
    with pytest.raises(DenseFileError, match='depth_scale'):
        read_depth(str(path))
    assert cv2.imwrite(str(tmp_path / 'd8.png'), (mm // 256).astype(np.uint8))
    with pytest.raises(DenseFileError, match='8-bit'):
        read_depth(str(tmp_path / 'd8.png'), depth_scale=1)
    monkeypatch.setenv('OPENCV_IO_ENABLE_OPENEXR', '1')
    assert cv2.imwrite(str(tmp_path / 'd.exr'), depth.astype(np.float32))
    np.testing.assert_array_equal(read_depth(str(tmp_path / 'd.exr')), depth)


def test_16bit_albedo(tmp_path):
    albedo8 = cv2.imread(osp.join(DENSE, 'albedo', SCENE + '.png'))[..., ::-1]
    path = tmp_path / 'a.png'
    _write_rgb(path, albedo8.astype(np.uint16) * 257)  # 8 -> 16 bit exactly
    np.testing.assert_allclose(read_albedo(str(path)),
                               albedo8.astype(np.float32) / 255, atol=1e-7)


def _png_normal_folder(root) -> str:
    """The dense sample as images/ + normals/ (16-bit PNG, OpenGL frame),
    without masks."""
    shutil.copytree(osp.join(DENSE, 'rgb'), root / 'images')
    (root / 'normals').mkdir()
    for path in sorted(glob.glob(osp.join(DENSE, 'normal', '*.npz'))):
        normal = np.load(path)['normal'] * np.float32([1, -1, -1])
        codes = np.round((normal + 1) / 2 * 65535).astype(np.uint16)
        name = osp.basename(path)[:-4] + '.png'
        _write_rgb(root / 'normals' / name, codes)
    return str(root)


def test_dataset_without_masks_reads_png_normals(tmp_path):
    root = _png_normal_folder(tmp_path)
    pipeline = [dict(type='Sapiens2LoadImage'),
                dict(type='LoadDenseAnnotations', normal_convention='opengl')]
    dataset = DATASETS.build(dict(
        type='NormalDataset', data_root=root, with_mask=False,
        data_prefix=dict(img_path='images', normal_path='normals'),
        pipeline=pipeline))
    assert len(dataset) == 4 and 'mask_path' not in dataset[0]
    sample = dataset[1]
    normal = _normals()
    valid = np.linalg.norm(normal, axis=2) > 0.5
    np.testing.assert_array_equal(sample['gt_mask'], valid)
    np.testing.assert_allclose(sample['gt_normal'][valid], normal[valid],
                               atol=1e-4)
    with pytest.raises(FileNotFoundError, match='mask folder'):
        DATASETS.build(dict(type='NormalDataset', data_root=root,
                            data_prefix=dict(img_path='images',
                                             normal_path='normals')))
