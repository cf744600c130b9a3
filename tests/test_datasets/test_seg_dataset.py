"""Seg29Dataset, seg transforms and pipelines on the bundled sample; bad input."""
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest
from mmengine.config import Config
from mmengine.dataset import Compose

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.registry import DATASETS, TRANSFORMS
from tests.conftest import DATA_DIR, REPO_DIR

SAMPLE = osp.join(DATA_DIR, 'seg_sample')
DATA_CFG = osp.join(REPO_DIR, 'configs', '_base_', 'datasets',
                    'seg29-1024x768.py')
VALID = set(range(29)) | {255}


def _dataset(pipeline=(), root=SAMPLE, **kwargs):
    return DATASETS.build(dict(
        type='Seg29Dataset', data_root=root,
        data_prefix=dict(img_path='images', seg_map_path='labels'),
        pipeline=list(pipeline), **kwargs))


def test_dataset_lists_pairs_with_seg29_metainfo():
    dataset = _dataset()
    assert len(dataset) == 4
    meta = seg29_metainfo()
    assert dataset.metainfo['classes'] == meta['classes']
    assert dataset.metainfo['palette'] == meta['palette']
    assert dataset.metainfo['flip_swap_pairs'] == meta['flip_swap_pairs']
    info = dataset.get_data_info(0)
    assert info['img_path'].endswith('images/000000000785.jpg')
    assert info['seg_map_path'].endswith('labels/000000000785.png')


def test_metainfo_matches_reference():
    meta = seg29_metainfo()
    assert meta['classes'][0] == 'Background'
    assert meta['classes'][22] == 'Torso' and meta['classes'][28] == 'Tongue'
    assert meta['palette'][15] == [255, 0, 0]
    assert meta['flip_swap_pairs'] == [(5, 14), (6, 15), (7, 16), (8, 17),
                                       (9, 18), (10, 19), (11, 20), (12, 21)]
    for left, right in meta['flip_swap_pairs']:
        assert meta['classes'][left].replace('Left', 'Right') == \
            meta['classes'][right]


def test_config_swap_pairs_match_metainfo():
    cfg = Config.fromfile(DATA_CFG)
    assert [tuple(p) for p in cfg.flip_swap_pairs] == \
        seg29_metainfo()['flip_swap_pairs']


def test_official_train_pipeline_on_bundled_data():
    cfg = Config.fromfile(DATA_CFG)
    np.random.seed(0)
    dataset = _dataset(cfg.train_pipeline)
    for i in range(4):
        out = dataset[i]
        assert tuple(out['inputs'].shape) == (3, 1024, 768)
        gt = out['data_samples'].gt_sem_seg.data
        assert tuple(gt.shape) == (1, 1024, 768)
        assert str(gt.dtype) == 'torch.int64'
        assert set(gt.unique().tolist()) <= VALID


def test_test_pipeline_keeps_label_at_original_size():
    cfg = Config.fromfile(DATA_CFG)
    dataset = _dataset(cfg.test_pipeline, test_mode=True)
    out = dataset[0]
    label = cv2.imread(osp.join(SAMPLE, 'labels', '000000000785.png'), 0)
    assert tuple(out['inputs'].shape) == (3, 1024, 768)
    gt = out['data_samples'].gt_sem_seg.data[0].numpy()
    assert gt.shape == label.shape == (170, 256)
    assert np.array_equal(gt, label)
    assert out['data_samples'].ori_shape == (170, 256)


def _loaded(name='000000000785'):
    load = Compose([dict(type='Sapiens2LoadImage'),
                    dict(type='LoadSegAnnotations')])
    return load(dict(img_path=osp.join(SAMPLE, 'images', name + '.jpg'),
                     seg_map_path=osp.join(SAMPLE, 'labels', name + '.png'),
                     reduce_zero_label=False, seg_fields=[]))


def test_flip_swaps_left_and_right_labels():
    cfg = Config.fromfile(DATA_CFG)
    flip_cfg = [t for t in cfg.train_pipeline if 'RandomFlip' in t['type']][0]
    flip = TRANSFORMS.build(dict(flip_cfg, prob=1.0))
    results = _loaded()
    label = results['gt_seg_map'].copy()
    image = results['img'].copy()
    out = flip(results)
    expected = label[:, ::-1].copy()
    swapped = expected.copy()
    for a, b in seg29_metainfo()['flip_swap_pairs']:
        swapped[expected == a] = b
        swapped[expected == b] = a
    assert np.array_equal(out['gt_seg_map'], swapped)
    assert np.array_equal(out['img'], image[:, ::-1])
    # Left hand pixels became right hand pixels, and centre classes stay.
    assert (label == 6).sum() == (out['gt_seg_map'] == 15).sum() > 0
    assert (label == 22).sum() == (out['gt_seg_map'] == 22).sum()


def test_resize_uses_area_to_shrink_and_cubic_to_enlarge():
    img = np.random.RandomState(0).randint(0, 255, (40, 30, 3), np.uint8)
    seg = np.random.RandomState(1).randint(0, 29, (40, 30)).astype(np.uint8)
    for h, w, interp in ((20, 15, cv2.INTER_AREA), (80, 60, cv2.INTER_CUBIC)):
        out = TRANSFORMS.build(dict(type='SegResize', height=h, width=w))(
            dict(img=img.copy(), gt_seg_map=seg.copy()))
        assert np.array_equal(out['img'],
                              cv2.resize(img, (w, h), interpolation=interp))
        assert np.array_equal(
            out['gt_seg_map'],
            cv2.resize(seg, (w, h), interpolation=cv2.INTER_NEAREST))
    out = TRANSFORMS.build(dict(type='SegResize', height=20, width=15,
                                test_mode=True))(
        dict(img=img.copy(), gt_seg_map=seg.copy()))
    assert out['img'].shape[:2] == (20, 15) and out['gt_seg_map'].shape == \
        (40, 30)


# Frames (width, height) for which comparing the widths (official) and
# comparing the areas pick different interpolations at 768x1024.
OFFICIAL_RULE_FRAMES = ((960, 588), (854, 480), (1024, 576), (800, 600),
                        (720, 1280))


def _official_resize(img, width, height):
    """The official image resize, written out: INTER_AREA only when the new
    width is smaller than the image width."""
    flag = cv2.INTER_AREA if width < img.shape[1] else cv2.INTER_CUBIC
    return cv2.resize(img, (width, height), interpolation=flag)


@pytest.mark.parametrize('frame', OFFICIAL_RULE_FRAMES)
def test_resize_interpolation_compares_widths(frame):
    w, h = frame
    img = np.random.RandomState(w).randint(0, 255, (h, w, 3), np.uint8)
    out = TRANSFORMS.build(dict(type='SegResize', height=1024, width=768,
                                test_mode=True))(dict(img=img.copy()))
    np.testing.assert_array_equal(out['img'], _official_resize(img, 768, 1024))
    # the shared helper is what the inferencers import
    from sapiens2_mm.datasets.seg.transforms.resize import resize_image
    np.testing.assert_array_equal(resize_image(img, 1024, 768), out['img'])
    # SegRandomResize (stretch to the box at ratio 1) uses the same rule
    rand = TRANSFORMS.build(dict(type='SegRandomResize', height=1024,
                                 width=768, ratio_range=(1.0, 1.0),
                                 keep_ratio=False))
    out = rand(dict(img=img.copy(), gt_seg_map=np.zeros((h, w), np.uint8)))
    np.testing.assert_array_equal(out['img'], _official_resize(img, 768, 1024))


def test_random_resize_fits_the_scaled_box():
    resize = TRANSFORMS.build(dict(type='SegRandomResize', height=100,
                                   width=75, ratio_range=(0.5, 0.5)))
    img = np.zeros((40, 80, 3), np.uint8)
    out = resize(dict(img=img, gt_seg_map=np.zeros((40, 80), np.uint8)))
    # box 50 x 37.5: the width binds, scale 37.5 / 80.
    assert out['img'].shape[:2] == (19, 38) == out['gt_seg_map'].shape


def test_random_crop_pads_and_caps_the_largest_class():
    crop = TRANSFORMS.build(dict(type='SegRandomCrop', height=8, width=6,
                                 prob=1.0, cat_max_ratio=0.75))
    img = np.full((4, 4, 3), 9, np.uint8)
    seg = np.ones((4, 4), np.uint8)
    out = crop(dict(img=img, gt_seg_map=seg))
    assert out['img'].shape == (8, 6, 3) and out['gt_seg_map'].shape == (8, 6)
    assert (out['img'][4:] == 0).all() and (out['gt_seg_map'][4:] == 255).all()
    np.random.seed(0)
    seg = np.zeros((40, 30), np.uint8)
    seg[:, 20:] = 3
    crop = TRANSFORMS.build(dict(type='SegRandomCrop', height=10, width=12,
                                 prob=1.0, cat_max_ratio=0.75))
    out = crop(dict(img=np.zeros((40, 30, 3), np.uint8), gt_seg_map=seg))
    _, counts = np.unique(out['gt_seg_map'], return_counts=True)
    assert len(counts) == 2 and counts.max() / counts.sum() < 0.75


def test_small_foreground_is_dropped():
    keep = TRANSFORMS.build(dict(type='SegFilterSmallForeground',
                                 min_ratio=0.01))
    seg = np.zeros((100, 100), np.uint8)
    seg[0, :99] = 255
    assert keep(dict(gt_seg_map=seg.copy())) is None
    seg[1, :100] = 4
    assert keep(dict(gt_seg_map=seg)) is not None


def test_blur_and_noise_change_only_the_image():
    results = _loaded()
    label = results['gt_seg_map'].copy()
    img = results['img'].copy()
    for cfg in (dict(type='SegRandomGaussianBlur', prob=1.0),
                dict(type='SegRandomGaussianNoise', prob=1.0)):
        out = TRANSFORMS.build(cfg)(dict(results, img=img.copy()))
        assert out['img'].dtype == np.uint8 and out['img'].shape == img.shape
        assert not np.array_equal(out['img'], img)
        assert np.array_equal(out['gt_seg_map'], label)


# ---- bad input -------------------------------------------------------------


@pytest.fixture
def bad_root(tmp_path):
    root = tmp_path / 'data'
    shutil.copytree(SAMPLE, root)
    return root


def test_label_values_outside_classes_name_the_file(bad_root):
    path = bad_root / 'labels' / '000000000785.png'
    label = cv2.imread(str(path), 0)
    label[0, 0] = 30
    label[0, 1] = 200
    cv2.imwrite(str(path), label)
    dataset = _dataset([dict(type='Sapiens2LoadImage'),
                        dict(type='LoadSegAnnotations')], root=str(bad_root))
    with pytest.raises(ValueError, match=r'000000000785\.png.*\[30, 200\]'):
        dataset[0]


def test_size_mismatch_names_both_files(bad_root):
    path = bad_root / 'labels' / '000000040083.png'
    cv2.imwrite(str(path), np.zeros((10, 12), np.uint8))
    dataset = _dataset([dict(type='Sapiens2LoadImage'),
                        dict(type='LoadSegAnnotations')], root=str(bad_root))
    with pytest.raises(ValueError,
                       match=r'000000040083\.png.*10x12.*000000040083\.jpg'):
        dataset[1]


def test_color_label_map_is_refused(bad_root):
    path = bad_root / 'labels' / '000000000785.png'
    cv2.imwrite(str(path), np.zeros((170, 256, 3), np.uint8))
    dataset = _dataset([dict(type='Sapiens2LoadImage'),
                        dict(type='LoadSegAnnotations')], root=str(bad_root))
    with pytest.raises(ValueError, match='single-channel'):
        dataset[0]


@pytest.mark.parametrize('folder,name', [('images', '000000196141.jpg'),
                                         ('labels', '000000196141.png')])
def test_unreadable_file_is_named(bad_root, folder, name):
    (bad_root / folder / name).write_bytes(b'not an image')
    dataset = _dataset([dict(type='Sapiens2LoadImage'),
                        dict(type='LoadSegAnnotations')], root=str(bad_root))
    with pytest.raises(ValueError, match=name.replace('.', r'\.')):
        dataset[2]


def test_missing_label_file_is_named_at_load(bad_root):
    (bad_root / 'labels' / '000000197388.png').unlink()
    with pytest.raises(FileNotFoundError, match=r'000000197388\.png'):
        _dataset(root=str(bad_root))


def test_missing_image_folder_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match='data_prefix.img_path'):
        _dataset(root=str(tmp_path))


@pytest.mark.parametrize('test_mode', [False, True])
def test_label_map_entirely_ignore_is_skipped_in_training(bad_root, test_mode,
                                                          caplog):
    name = '000000000785'
    path = bad_root / 'labels' / f'{name}.png'
    label = cv2.imread(str(path), 0)
    cv2.imwrite(str(path), np.full_like(label, 255))
    dataset = _dataset([dict(type='Sapiens2LoadImage'),
                        dict(type='LoadSegAnnotations'),
                        dict(type='mmseg.PackSegInputs')], root=str(bad_root),
                       test_mode=test_mode)
    idx = [osp.basename(dataset.get_data_info(i)['img_path'])
           for i in range(len(dataset))].index(f'{name}.jpg')
    sample = dataset[idx]
    got = osp.basename(sample['data_samples'].img_path)
    if test_mode:
        assert got == f'{name}.jpg'  # kept: the metrics ignore its pixels
    else:
        assert got != f'{name}.jpg'  # another sample was drawn
        assert (sample['data_samples'].gt_sem_seg.data != 255).any()
    assert dataset.skipped['label map entirely ignore_index'] == 1
    for i in range(len(dataset)):
        if i != idx:
            dataset[i]  # labelled maps are not counted
    assert dataset.skipped['label map entirely ignore_index'] == 1
