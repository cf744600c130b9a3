"""4K pipelines: even letterbox, targets and intrinsics at the 2K output."""
import os.path as osp

import numpy as np
import pytest

from sapiens2_mm.registry import TRANSFORMS
from tests.test_datasets.test_dense_transforms import (
    K0,
    coordinate_sample,
    project,
    sample_bilinear,
    world_points,
)
from tests.tiny_variants import DENSE_TASKS


def _build(**cfg):
    return TRANSFORMS.build(cfg)


def test_aligned_letterbox_has_even_size_and_padding_known_answer():
    # 333x500 into 4096x3072: r = min(3072 / 500, 4096 / 333) = 6.144, width
    # 3072, height 333 * 6.144 = 2045.95 -> floor 2045 (pad 2051: top 1025,
    # odd); align=2 floors to 2044 and pads 1026 / 1026.
    img = np.zeros((333, 500, 3), np.uint8)
    plain = _build(type='DenseResizePad', height=4096, width=3072,
                   size_rounding='floor')(dict(img=img.copy()))
    assert plain['padding_size'] == (0, 0, 1025, 1026)
    out = _build(type='DenseResizePad', height=4096, width=3072,
                 size_rounding='floor', align=2)(dict(img=img.copy()))
    assert out['img'].shape == (4096, 3072, 3)
    assert out['padding_size'] == (0, 0, 1026, 1026)
    sx, sy = out['scale_factor']
    assert (sx, sy) == (3072 / 500, 2044 / 333)


def test_align_must_divide_the_size():
    with pytest.raises(ValueError, match='align=3'):
        _build(type='DenseResizePad', height=4096, width=3072, align=3)


def test_training_targets_and_camera_land_on_the_output_grid():
    """Targets at half the letterboxed size with the output-frame cam_K: a
    world point projected with it lands where the (bilinear) albedo target
    holds that point's original pixel coordinates."""
    results = coordinate_sample()  # 60x80, albedo = (u, v, u) / 100
    results = _build(type='DenseResizePad', height=256, width=192,
                     align=2)(results)
    out = _build(type='DenseToOutputSize', scale=0.5)(results)
    assert out['img'].shape[:2] == (256, 192)  # the input stays
    assert out['gt_albedo'].shape[:2] == (128, 96)
    assert out['gt_mask'].shape == (128, 96) and out['output_shape'] == (
        128, 96)
    world, uv = world_points()
    p = project(out['cam_K'], out['cam_extrinsics'], world)
    left, right, top, bottom = (v // 2 for v in out['padding_size'])
    inside = ((p[:, 0] >= left + 2) & (p[:, 0] <= 95 - right - 2)
              & (p[:, 1] >= top + 2) & (p[:, 1] <= 127 - bottom - 2))
    assert inside.sum() > 20
    shown = sample_bilinear(out['gt_albedo'], p[inside]) * 100
    assert np.abs(shown[:, :2] - uv[inside]).max() < 0.05
    np.testing.assert_array_equal(out['gt_cam_K'], out['cam_K'])


def test_test_time_moves_only_the_network_intrinsics():
    results = _build(type='DenseResizePad', height=256, width=192,
                     size_rounding='floor', resize_targets=False,
                     align=2)(coordinate_sample())
    net_K = results['cam_K'].copy()
    out = _build(type='DenseToOutputSize', scale=0.5,
                 resize_targets=False)(results)
    assert out['gt_depth'].shape == (60, 80)  # original size, for metrics
    np.testing.assert_array_equal(out['gt_cam_K'], K0)
    assert out['cam_K'][0, 0] == pytest.approx(net_K[0, 0] / 2)
    assert out['cam_K'][0, 2] == pytest.approx((net_K[0, 2] + 0.5) / 2 - 0.5)


def test_4k_canonical_scale_equals_the_1k_one():
    """The 4K pipeline (4096x3072 input, 2K output frame, canonical focal
    1536) gives a photo the canonical scale the 1K pipeline (1024x768,
    focal 768) gives it, so both models learn the same canonical space."""
    def scale(height, width, focal, extra):
        results = dict(img=np.zeros((600, 450, 3), np.uint8),
                       gt_depth=np.full((600, 450), 3.0, np.float32),
                       gt_mask=np.ones((600, 450), bool),
                       cam_K=np.array([[500.0, 0, 225], [0, 500, 300],
                                       [0, 0, 1]]))
        results['gt_cam_K'] = results['cam_K'].copy()
        steps = [dict(type='DenseResizePad', height=height, width=width,
                      size_rounding='floor', resize_targets=False,
                      align=2)] + extra + [
            dict(type='PointmapGenerateTarget',
                 canonical_focal_length=focal)]
        for step in steps:
            results = _build(**step)(results)
        return results['canonical_scale']

    one_k = scale(1024, 768, 768.0, [])
    four_k = scale(4096, 3072, 1536.0, [
        dict(type='DenseToOutputSize', scale=0.5, resize_targets=False)])
    # 768 / (500 * 768 / 450) both ways
    assert one_k == pytest.approx(768 / (500 * 768 / 450))
    assert four_k == pytest.approx(one_k)


def test_output_size_refuses_sizes_the_scale_does_not_divide():
    with pytest.raises(ValueError, match='101x80'):
        _build(type='DenseToOutputSize', scale=0.5)(
            dict(img=np.zeros((101, 80, 3), np.uint8)))


def test_seg_label_comes_down_to_the_output_size():
    label = np.arange(48, dtype=np.uint8).reshape(8, 6)
    out = _build(type='SegLabelToOutputSize', scale=0.5)(
        dict(img=np.zeros((8, 6, 3), np.uint8), gt_seg_map=label))
    np.testing.assert_array_equal(out['gt_seg_map'], label[0::2, 0::2])
    assert out['img'].shape[:2] == (8, 6)
    with pytest.raises(ValueError, match='7x6'):
        _build(type='SegLabelToOutputSize', scale=0.5)(
            dict(img=np.zeros((7, 6, 3), np.uint8), gt_seg_map=label))


def test_4k_pointmap_training_sample_is_consistent_in_the_output_frame():
    """The shipped 4K pointmap training pipeline on a bundled scene: the 2K
    target with the packed cam_K gives the intrinsics-consistency loss 0
    (it compares X, Y with (u - cx) Z / fx on the 2K pixel grid); with the
    4096x3072 input's intrinsics it would not."""
    import torch
    from mmengine.config import Config

    from sapiens2_mm.registry import DATASETS, MODELS
    from tests.conftest import DATA_DIR, REPO_DIR
    cfg = Config.fromfile(osp.join(
        REPO_DIR, 'configs', 'pointmap',
        'sapiens2-1b-4k_8xb3-40k_pointmap-4096x3072.py'))
    dataset_cfg = cfg.train_dataloader.dataset
    dataset_cfg.data_root = osp.join(DATA_DIR, 'dense_sample')
    np.random.seed(0)
    sample = DATASETS.build(dataset_cfg)[0]
    assert tuple(sample['inputs'].shape) == (3, 4096, 3072)
    data = sample['data_samples']
    target = data.gt_pointmap.data[None].float()
    mask = data.gt_mask.data[None].bool()
    assert tuple(target.shape[-2:]) == (2048, 1536) and mask.any()
    K = torch.as_tensor(np.asarray(data.cam_K), dtype=torch.float32)[None]
    loss = MODELS.build(dict(type='PointmapIntrinsicsConsistencyLoss'))
    mean_z = target[:, 2][mask[:, 0]].mean()
    assert loss(target, target, mask, intrinsics=K) < 1e-4 * mean_z
    input_K = K.clone()
    input_K[:, :2] *= 2  # the input frame: twice the focal / centre
    assert loss(target, target, mask, intrinsics=input_K) > 0.1 * mean_z
    # the canonical focal is the output width: 1536 / fx of the 2K frame
    assert data.canonical_scale == pytest.approx(1536 / float(K[0, 0, 0]))


@pytest.mark.parametrize('h,w,height,width,align', [
    (60, 85, 100, 200, 1),  # padding (29, 30)
    (85, 58, 256, 192, 2),  # 4K-style even letterbox: (8, 10)
])
def test_flip_test_view_of_an_uneven_letterbox_maps_back_exactly(
        h, w, height, width, align):
    """Flip test: the letterboxed image is mirrored, so its padding is too.
    The mirrored view of a coordinate image, used as its own 'prediction'
    (at half size for the 4K case), must map back onto the original pixel
    coordinates (it was one letterbox pixel off before)."""
    import torch

    from sapiens2_mm.models.heads.dense.letterbox import to_original_size
    v, u = np.mgrid[0:h, 0:w].astype(np.float32)
    results = dict(img=np.stack([u, v, np.ones_like(u)], -1),
                   img_shape=(h, w), ori_shape=(h, w))
    results = _build(type='DenseResizePad', height=height, width=width,
                     size_rounding='floor', resize_targets=False,
                     align=align)(results)
    before = results['padding_size']
    results = _build(type='DenseRandomFlip', prob=1.0,
                     flip_targets=False)(results)
    left, right, top, bottom = before
    assert results['padding_size'] == (right, left, top, bottom)
    assert left != right  # the uneven case
    pred = torch.from_numpy(results['img']).permute(2, 0, 1)[None].float()
    if align == 2:  # the 4K heads' half-size output
        pred = torch.nn.functional.interpolate(
            pred, scale_factor=0.5, mode='bilinear', align_corners=False)
    meta = dict(padding_size=results['padding_size'], flip=True,
                flip_direction='horizontal', ori_shape=(h, w),
                img_shape=results['img_shape'])
    out = to_original_size(pred, meta, negate_x=False)[0].numpy()
    # away from the borders, the mirrored-back u channel is each pixel's u
    assert np.abs(out - u)[4:-4, 4:-4].max() < 0.05


def _equal_results(a, b):
    assert a.keys() == b.keys(), set(a) ^ set(b)
    for key, x in a.items():
        if isinstance(x, np.ndarray):
            y = b[key]
            assert x.dtype == y.dtype and x.shape == y.shape, key
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == b[key], key


def _dense_4k_training_pipelines():
    """(task, train pipeline) of every registered task whose 4K config
    letterboxes with DenseResizePad."""
    import glob

    from mmengine.config import Config

    from sapiens2_mm.apis import task_names
    from tests.conftest import REPO_DIR
    found = []
    for task in task_names():
        path, = glob.glob(osp.join(REPO_DIR, 'configs', task,
                                   'sapiens2-1b-4k_*.py'))
        cfg = Config.fromfile(path)
        pipeline = cfg.train_dataloader.dataset.pipeline
        if 'DenseResizePad' in [s['type'] for s in pipeline]:
            found.append((task, cfg))
    return found


DENSE_4K = _dense_4k_training_pipelines()


@pytest.mark.parametrize('convention', ['center', 'official'])
@pytest.mark.parametrize('task,cfg', DENSE_4K, ids=[t for t, _ in DENSE_4K])
def test_letterbox_to_the_output_frame_equals_letterbox_then_output_size(
        task, cfg, convention):
    """DenseResizePad(output_scale=0.5) against DenseResizePad +
    DenseToOutputSize(0.5) on the bundled scenes after the shipped 4K
    training augmentations (random scale, crop, flip; four seeds): every
    array (image, each target, mask) and matrix is equal. The targets are
    copies (nearest) or, for albedo, the same cv2 arithmetic on the same
    values (a 2x2 mean per output pixel), so nothing needs a tolerance."""
    import copy

    from sapiens2_mm.registry import DATASETS
    from tests.conftest import DATA_DIR
    assert {t for t, _ in DENSE_4K} == set(DENSE_TASKS)
    dataset_cfg = copy.deepcopy(cfg.train_dataloader.dataset)
    pipeline = dataset_cfg.pop('pipeline')
    dataset = DATASETS.build(dict(dataset_cfg, pipeline=[],
                                  data_root=osp.join(DATA_DIR,
                                                     'dense_sample')))
    at = [s['type'] for s in pipeline].index('DenseResizePad')
    fused = dict(pipeline[at], pixel_convention=convention)
    assert fused.pop('output_scale') == 0.5
    prefix = [TRANSFORMS.build(s) for s in pipeline[:at]]
    two_steps = [_build(**fused), _build(type='DenseToOutputSize', scale=0.5,
                                         pixel_convention=convention)]
    one_step = _build(**fused, output_scale=0.5)
    for seed in range(4):
        np.random.seed(seed)
        results = dataset.get_data_info(seed % len(dataset))
        for step in prefix:
            results = step(results)
        expected = copy.deepcopy(results)
        for step in two_steps:
            expected = step(expected)
        got = one_step(results)
        assert got['gt_mask'].shape == (2048, 1536)
        _equal_results(expected, got)


@pytest.mark.parametrize('align,rounding', [(2, 'round'), (1, 'floor')])
def test_letterbox_to_the_output_frame_on_odd_sizes(align, rounding):
    """Odd photo sizes, an unaligned letterbox (odd padding: the albedo
    falls back to the two steps) and test mode: equal to the two steps."""
    import copy
    rng = np.random.default_rng(0)
    for h, w in [(37, 91), (90, 41), (64, 48), (33, 33)]:
        results = dict(
            img=rng.integers(0, 255, (h, w, 3), dtype=np.uint8),
            gt_mask=rng.random((h, w)) > 0.3,
            gt_depth=rng.random((h, w), dtype=np.float32),
            gt_normal=rng.random((h, w, 3), dtype=np.float32),
            gt_albedo=rng.random((h, w, 3), dtype=np.float32),
            cam_K=np.array([[50.0, 0, w / 2], [0, 50, h / 2], [0, 0, 1]]))
        results['gt_cam_K'] = results['cam_K'].copy()
        for targets in (True, False):
            step = dict(type='DenseResizePad', height=128, width=96,
                        size_rounding=rounding, align=align,
                        resize_targets=targets)
            expected = _build(**step)(copy.deepcopy(results))
            expected = _build(type='DenseToOutputSize', scale=0.5,
                              resize_targets=targets)(expected)
            got = _build(**step, output_scale=0.5)(copy.deepcopy(results))
            _equal_results(expected, got)


def test_output_scale_must_give_whole_pixels():
    with pytest.raises(ValueError, match='output_scale=0.3'):
        _build(type='DenseResizePad', height=4096, width=3072,
               output_scale=0.3)
