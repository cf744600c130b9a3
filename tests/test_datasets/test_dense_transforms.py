"""Dense transforms: camera bookkeeping, letterbox, targets, pack filters."""
import numpy as np
import pytest
import torch
from mmengine.dataset import Compose

from sapiens2_mm.registry import TRANSFORMS
from sapiens2_mm.structures import DenseDataSample

H, W = 60, 80
K0 = np.array([[70.0, 0.0, 41.3], [0.0, 72.0, 28.6], [0.0, 0.0, 1.0]])


def _rot(yaw):
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


M0 = np.eye(4)
M0[:3, :3] = _rot(0.3)
M0[:3, 3] = [0.2, -0.1, 0.5]


def coordinate_sample():
    """An image whose channels are each pixel's own (u, v, 1): bilinear
    resampling of a linear ramp is exact, so after any transform the image
    says which original point a pixel shows. The targets carry the same
    coordinates (nearest)."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float32)
    img = np.stack([u, v, np.ones_like(u)], axis=-1)
    return dict(img=img, img_shape=(H, W), ori_shape=(H, W),
                cam_K=K0.copy(), gt_cam_K=K0.copy(),
                cam_extrinsics=M0.copy(), gt_depth=u + 1.0,
                gt_albedo=np.stack([u, v, u], -1) / 100.0,
                gt_mask=np.ones((H, W), bool))


def project(K, M, world):
    cam = world @ M[:3, :3].T + M[:3, 3]
    p = cam @ K.T
    return p[:, :2] / p[:, 2:]


def sample_bilinear(img, uv):
    """Exact bilinear sampling (cv2.remap quantises to 1/32 px)."""
    x0 = np.floor(uv[:, 0]).astype(int)
    y0 = np.floor(uv[:, 1]).astype(int)
    fx = (uv[:, 0] - x0)[:, None]
    fy = (uv[:, 1] - y0)[:, None]
    img = img.astype(np.float64)
    return ((1 - fx) * (1 - fy) * img[y0, x0] + fx * (1 - fy) * img[y0, x0 + 1]
            + (1 - fx) * fy * img[y0 + 1, x0] + fx * fy * img[y0 + 1, x0 + 1])


def world_points(n=400, seed=0):
    """World points in front of the camera, seen well inside the image."""
    rng = np.random.default_rng(seed)
    uv = np.stack([rng.uniform(4, W - 5, n), rng.uniform(4, H - 5, n)], 1)
    z = rng.uniform(1.0, 6.0, n)
    cam = np.stack([(uv[:, 0] - K0[0, 2]) / K0[0, 0] * z,
                    (uv[:, 1] - K0[1, 2]) / K0[1, 1] * z, z], 1)
    world = (cam - M0[:3, 3]) @ M0[:3, :3]
    return world, uv


def landing_error(results, world, uv, margin=3):
    """Max distance (px) between where the transformed camera puts each
    world point and the original pixel the transformed image shows there,
    over the points that land inside the content (not padding)."""
    p = project(results['cam_K'], results['cam_extrinsics'], world)
    h, w = results['img'].shape[:2]
    left, right, top, bottom = results.get('padding_size', (0, 0, 0, 0))
    inside = ((p[:, 0] >= left + margin) & (p[:, 0] <= w - 1 - right - margin)
              & (p[:, 1] >= top + margin) & (p[:, 1] <= h - 1 - bottom -
                                               margin))
    assert inside.sum() > 20
    shown = sample_bilinear(results['img'], p[inside])
    assert np.allclose(shown[:, 2], 1.0, atol=1e-4)  # content, not padding
    return np.abs(shown[:, :2] - uv[inside]).max(), inside


@pytest.mark.parametrize('cfg', [
    dict(type='DenseRandomScale', scale_range=(1.7, 1.7), prob=1.0),
    dict(type='DenseRandomScale', scale_range=(0.55, 0.55), prob=1.0),
    dict(type='DenseRandomCropContinuous', area_range=(0.5, 0.5), prob=1.0),
    dict(type='DenseRandomFlip', prob=1.0),
    dict(type='DenseResizePad', height=256, width=192),
    dict(type='DenseResizePad', height=100, width=200,
         size_rounding='floor'),
], ids=['upscale', 'downscale', 'crop', 'flip', 'letterbox', 'pillarbox'])
def test_projected_point_lands_on_transformed_pixel(cfg):
    np.random.seed(1)
    world, uv = world_points()
    results = TRANSFORMS.build(cfg)(coordinate_sample())
    err, _ = landing_error(results, world, uv)
    assert err < 2e-3
    # Nearest-resized targets: the target pixel nearest to the projection
    # (at most half a target pixel away) holds the source pixel nearest to
    # its centre (at most half a source pixel away).
    p = project(results['gt_cam_K'], results['cam_extrinsics'], world)
    h, w = results['gt_depth'].shape
    pix = np.round(p).astype(int)
    ok = (pix[:, 0] >= 0) & (pix[:, 0] < w) & (pix[:, 1] >= 0) & \
        (pix[:, 1] < h)
    pix, u_true = pix[ok], uv[ok, 0]
    valid = results['gt_mask'][pix[:, 1], pix[:, 0]]
    assert valid.sum() > 20
    src_u = results['gt_depth'][pix[valid, 1], pix[valid, 0]] - 1
    if cfg['type'] == 'DenseRandomScale':
        scale = results['img'].shape[1] / W
    elif cfg['type'] == 'DenseResizePad':
        scale = results['scale_factor'][0]
    else:
        scale = 1.0
    assert np.abs(src_u - u_true[valid]).max() <= 0.5 + 0.5 / scale + 1e-3


def test_chain_of_all_geometric_transforms():
    """Scale, crop, flip and letterbox in a row (the training order)."""
    world, uv = world_points(800, seed=3)
    for seed in range(5):
        np.random.seed(seed)
        pipeline = Compose([
            dict(type='DenseRandomScale', scale_range=(0.6, 1.8), prob=1.0),
            dict(type='DenseRandomCropContinuous', area_range=(0.5, 0.9),
                 prob=1.0),
            dict(type='DenseRandomFlip', prob=0.5),
            dict(type='DenseResizePad', height=256, width=192)])
        results = pipeline(coordinate_sample())
        err, _ = landing_error(results, world, uv)
        assert err < 5e-3, seed


def test_official_pixel_convention_is_half_a_pixel_off():
    """With the official cx * s the same check fails by ~ (s - 1) / 2 px:
    the test above can fail."""
    world, uv = world_points()
    results = TRANSFORMS.build(dict(
        type='DenseRandomScale', scale_range=(2.0, 2.0), prob=1.0,
        pixel_convention='official'))(coordinate_sample())
    err, _ = landing_error(results, world, uv)
    assert 0.2 < err < 0.6


def test_flip_negates_normal_x_and_extrinsics_first_row():
    results = coordinate_sample()
    normal = np.zeros((H, W, 3), np.float32)
    normal[:, :W // 2] = [0.6, 0.0, -0.8]
    normal[:, W // 2:] = [0.0, 0.6, -0.8]
    results['gt_normal'] = normal
    out = TRANSFORMS.build(dict(type='DenseRandomFlip', prob=1.0))(results)
    assert out['flip'] and out['flip_direction'] == 'horizontal'
    np.testing.assert_allclose(out['gt_normal'][:, -1], [[-0.6, 0, -0.8]] * H)
    np.testing.assert_allclose(out['gt_normal'][:, 0], [[0, 0.6, -0.8]] * H)
    np.testing.assert_allclose(out['cam_extrinsics'][0], -M0[0])
    np.testing.assert_allclose(out['cam_extrinsics'][1:], M0[1:])
    assert out['cam_K'][0, 2] == pytest.approx(W - 1 - K0[0, 2])
    # No flip: unchanged, flag False.
    np.random.seed(0)
    out = TRANSFORMS.build(dict(type='DenseRandomFlip', prob=0.0))(
        coordinate_sample())
    assert out['flip'] is False


@pytest.mark.parametrize('rounding,new_w,pad', [
    # 1024x768 box, 301x401 image: r = min(768/401, 1024/301) = 1.91521...;
    # height 301 * r = 576.48 -> int 576 / round 576, width 768.
    ('floor', 768, (0, 0, 224, 224)),
    ('round', 768, (0, 0, 224, 224)),
])
def test_letterbox_sizes_and_padding_known_answer(rounding, new_w, pad):
    img = np.full((301, 401, 3), 200, np.uint8)
    out = TRANSFORMS.build(dict(type='DenseResizePad', height=1024,
                                width=768, size_rounding=rounding))(
        dict(img=img, gt_mask=np.ones((301, 401), bool)))
    assert out['img'].shape == (1024, 768, 3)
    assert out['padding_size'] == pad
    assert out['img'][:224].max() == 0 and out['img'][-224:].max() == 0
    assert out['img'][224:800].min() == 200
    assert out['gt_mask'][224:800].all() and not out['gt_mask'][:224].any()


def test_letterbox_int_truncation_differs_from_round():
    # 100x77 into 1024x768: r = min(7.68, 9.974) = 7.68 on the width? No:
    # r = min(768 / 77, 1024 / 100) = 9.974; width 768, height 997.4 ->
    # floor 997 (pad 27 -> 13 / 14), round 997 as well; 100x75.3 style
    # sizes need a .5 fraction: 200x153 -> r = min(5.0196, 5.12) = 5.0196,
    # height 200 * 5.0196 = 1003.92 -> floor 1003, round 1004.
    img = np.zeros((200, 153, 3), np.uint8)
    floor = TRANSFORMS.build(dict(type='DenseResizePad', height=1024,
                                  width=768, size_rounding='floor'))(
        dict(img=img.copy()))
    rnd = TRANSFORMS.build(dict(type='DenseResizePad', height=1024,
                                width=768, size_rounding='round'))(
        dict(img=img.copy()))
    assert floor['padding_size'] == (0, 0, 10, 11)
    assert rnd['padding_size'] == (0, 0, 10, 10)


def test_test_time_letterbox_keeps_targets_and_their_intrinsics():
    results = coordinate_sample()
    out = TRANSFORMS.build(dict(type='DenseResizePad', height=256, width=192,
                                size_rounding='floor',
                                resize_targets=False))(results)
    assert out['img'].shape[:2] == (256, 192)
    assert out['gt_depth'].shape == (H, W) and out['gt_mask'].shape == (H, W)
    np.testing.assert_array_equal(out['gt_cam_K'], K0)
    r = 192 / W  # 2.4, height 144, padding 56 / 56
    assert out['padding_size'] == (0, 0, 56, 56)
    np.testing.assert_allclose(out['cam_K'][0, 0], K0[0, 0] * r)
    np.testing.assert_allclose(out['cam_K'][1, 2],
                               (K0[1, 2] + 0.5) * r - 0.5 + 56)


def test_pointmap_target_known_answer():
    K = np.array([[100.0, 0, 20], [0, 100.0, 10], [0, 0, 1]])
    depth = np.full((30, 40), 2.0, np.float32)
    mask = np.ones((30, 40), bool)
    mask[0, 0] = False
    out = TRANSFORMS.build(dict(type='PointmapGenerateTarget'))(dict(
        gt_depth=depth, gt_mask=mask, cam_K=K, gt_cam_K=K))
    # Pixel (u=30, v=15): X = (30-20)*2/100 = 0.2, Y = 0.1, Z = 2;
    # canonical scale 768/100 = 7.68.
    assert out['canonical_scale'] == pytest.approx(7.68)
    np.testing.assert_allclose(out['gt_pointmap'][15, 30],
                               [1.536, 0.768, 15.36], rtol=1e-6)
    np.testing.assert_array_equal(out['gt_pointmap'][0, 0], 0)
    assert out['gt_mean_depth'] == pytest.approx(15.36)
    np.testing.assert_allclose(out['gt_depth'][15, 30], 2.0)  # metric
    np.testing.assert_array_equal(out['cam_K'], K)  # pre-canonical


def test_pointmap_target_at_test_time_uses_network_focal_length():
    """Targets at the original size, canonical scale of the letterboxed
    input: equal to letterboxing the targets too (same 3-D points)."""
    K = np.array([[100.0, 0, 20], [0, 100.0, 10], [0, 0, 1]])
    net_K = K.copy()
    net_K[0, 0] = net_K[1, 1] = 250.0  # after a x2.5 letterbox
    depth = np.full((30, 40), 2.0, np.float32)
    out = TRANSFORMS.build(dict(type='PointmapGenerateTarget'))(dict(
        gt_depth=depth, gt_mask=np.ones((30, 40), bool), cam_K=net_K,
        gt_cam_K=K))
    assert out['canonical_scale'] == pytest.approx(768 / 250)
    np.testing.assert_allclose(out['gt_pointmap'][15, 30],
                               np.array([0.2, 0.1, 2.0]) * 768 / 250,
                               rtol=1e-6)


def test_normal_target_renormalizes_and_marks_background():
    normal = np.tile(np.array([0.0, 0.0, -2.0], np.float32), (4, 5, 1))
    mask = np.ones((4, 5), bool)
    mask[0] = False
    out = TRANSFORMS.build(dict(type='NormalGenerateTarget'))(dict(
        gt_normal=normal, gt_mask=mask))
    np.testing.assert_allclose(out['gt_normal'][1:], np.tile([0, 0, -1.0],
                                                              (3, 5, 1)))
    assert (out['gt_normal'][0] == -1000).all()


def _packable(mask, **extra):
    results = dict(img=np.zeros(mask.shape + (3,), np.uint8), gt_mask=mask,
                   img_path='x.png', ori_shape=mask.shape,
                   img_shape=mask.shape)
    results.update(extra)
    return results


def test_pack_yields_uint8_chw_and_dense_data_sample():
    mask = np.zeros((20, 10), bool)
    mask[5:15, 2:8] = True
    img = np.random.default_rng(0).integers(0, 255, (20, 10, 3), np.uint8)
    normal = np.zeros((20, 10, 3), np.float32)
    normal[..., 2] = -1
    results = _packable(mask, img=img, gt_normal=normal, cam_K=K0,
                        canonical_scale=1.5, padding_size=(1, 2, 3, 4))
    out = TRANSFORMS.build(dict(type='PackDenseInputs'))(results)
    assert out['inputs'].dtype == torch.uint8
    assert out['inputs'].shape == (3, 20, 10)
    assert torch.equal(out['inputs'], torch.from_numpy(img).permute(2, 0, 1))
    sample = out['data_samples']
    assert isinstance(sample, DenseDataSample)
    assert sample.gt_mask.data.shape == (1, 20, 10)
    assert sample.gt_mask.data.dtype == torch.bool
    assert sample.gt_normal.data.shape == (3, 20, 10)
    assert sample.cam_K.dtype == np.float32 and sample.canonical_scale == 1.5
    assert sample.padding_size == (1, 2, 3, 4) and sample.flip is False


@pytest.mark.parametrize('make,reason', [
    (lambda: _packable(np.zeros((20, 10), bool)), 'fewer than 16'),
    (lambda: _packable(np.ones((20, 10), bool)), 'more than 96%'),
    (lambda: _packable(np.pad(np.ones((10, 10), bool), ((5, 5), (0, 0))),
                       gt_pointmap=np.full((20, 10, 3), 0.03, np.float32)),
     'canonical depth below 0.04'),
    (lambda: _packable(np.pad(np.ones((10, 10), bool), ((5, 5), (0, 0))),
                       gt_albedo=np.full((20, 10, 3), 0.4, np.float32)),
     'albedo standard deviation below 0.02'),
])
def test_pack_drops_and_counts_training_samples(make, reason):
    pack = TRANSFORMS.build(dict(type='PackDenseInputs'))
    assert pack(make()) is None
    assert pack(make()) is None
    assert [(k, v) for k, v in pack.skipped.items() if reason in k] and \
        sum(pack.skipped.values()) == 2
    # At test time the same sample is kept, never dropped.
    test_pack = TRANSFORMS.build(dict(type='PackDenseInputs', test_mode=True))
    assert test_pack(make()) is not None


def test_pack_keeps_passing_samples_at_the_limits():
    mask = np.zeros((20, 10), bool)
    mask.flat[:16] = True  # exactly 16 pixels
    albedo = np.zeros((20, 10, 3), np.float32)
    albedo[:1] = 0.5  # std over the mask 0.25 > 0.02
    pack = TRANSFORMS.build(dict(type='PackDenseInputs'))
    assert pack(_packable(mask, gt_albedo=albedo)) is not None
    points = np.full((20, 10, 3), 0.0401, np.float32)
    assert pack(_packable(mask, gt_pointmap=points)) is not None
    assert not pack.skipped


def test_test_time_empty_mask_is_kept_and_counted():
    pack = TRANSFORMS.build(dict(type='PackDenseInputs', test_mode=True))
    out = pack(_packable(np.zeros((8, 8), bool)))
    assert out is not None and not out['data_samples'].gt_mask.data.any()
    assert pack.empty_masks == 1


def test_solarize_follows_the_official_threshold():
    img = np.array([[[0, 128, 129]], [[200, 255, 127]]], np.uint8)
    out = TRANSFORMS.build(dict(type='RandomSolarize', prob=1.0))(
        dict(img=img.copy()))
    # Values > 128 are inverted; 128 itself is kept (mmcv.solarize would
    # invert it to 127).
    np.testing.assert_array_equal(out['img'], [[[0, 128, 126]],
                                               [[55, 0, 127]]])


@pytest.mark.parametrize('threshold', [0, 127.5, 128, 254, 255])
def test_solarize_table_equals_the_per_pixel_formula(threshold):
    """uint8 images go through a 256-entry table: the bytes of the formula
    applied per pixel (``solarize``, also what other dtypes get)."""
    rng = np.random.default_rng(0)
    every = np.arange(256 * 3, dtype=np.uint8).reshape(16, 16, 3)
    step = TRANSFORMS.build(dict(type='RandomSolarize', prob=1.0,
                                 threshold=threshold))
    for img in (every, every[:, ::-1], every[..., 0], every[..., :1],
                rng.integers(0, 256, (4, 5, 6), dtype=np.uint8),
                rng.uniform(0, 255, (6, 7, 3)).astype(np.float32)):
        want = step.solarize(img)
        got = step(dict(img=img.copy()))['img']
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_down_up_sample_changes_detail_not_size_or_targets():
    np.random.seed(0)
    img = np.random.default_rng(1).integers(0, 255, (64, 48, 3), np.uint8)
    mask = np.ones((64, 48), bool)
    out = TRANSFORMS.build(dict(type='RandomDownUpSample', prob=1.0))(
        dict(img=img.copy(), gt_mask=mask))
    assert out['img'].shape == img.shape and out['img'].dtype == np.uint8
    assert not np.array_equal(out['img'], img)
    assert out['gt_mask'] is mask
    with pytest.raises(ValueError, match='scale_range'):
        TRANSFORMS.build(dict(type='RandomDownUpSample', scale_range=(0, 2)))


def test_crop_offsets_reach_both_ends_and_stay_inside():
    crop = TRANSFORMS.build(dict(type='DenseRandomCropContinuous',
                                 ar_range=(1.0, 1.0), area_range=(0.25, 0.25),
                                 prob=1.0))
    xs, sizes = set(), set()
    np.random.seed(0)
    for _ in range(300):
        out = crop(dict(img=np.zeros((40, 40, 3), np.uint8),
                        cam_K=np.eye(3)))
        sizes.add(out['img'].shape[:2])
        xs.add(-out['cam_K'][0, 2])
    assert sizes == {(20, 20)}  # never one pixel short
    assert min(xs) == 0 and max(xs) == 20


def test_skip_logging_is_rate_limited():
    from sapiens2_mm.datasets.dense.transforms.reporting import should_log
    assert [c for c in range(1, 20001) if should_log(c)] == \
        list(range(1, 11)) + [100, 1000, 10000]


def test_flip_without_targets_mirrors_only_image_and_its_intrinsics():
    results = coordinate_sample()
    out = TRANSFORMS.build(dict(type='DenseRandomFlip', prob=1.0,
                                flip_targets=False))(results)
    assert out['flip']
    np.testing.assert_array_equal(out['img'][:, 0, 0], W - 1)
    np.testing.assert_array_equal(out['gt_depth'], coordinate_sample()[
        'gt_depth'])
    assert out['cam_K'][0, 2] == pytest.approx(W - 1 - K0[0, 2])
    np.testing.assert_array_equal(out['gt_cam_K'], K0)
    np.testing.assert_array_equal(out['cam_extrinsics'], M0)


def test_official_convention_reproduces_the_official_formulas():
    """Official K updates: scale fx, fy, cx, cy by the drawn s; letterbox
    by r = min(W / w, H / h) then add the offsets (hand-computed)."""
    np.random.seed(0)
    s = 1.3
    out = TRANSFORMS.build(dict(type='DenseRandomScale', scale_range=(s, s),
                                prob=1.0, pixel_convention='official'))(
        dict(img=np.zeros((H, W, 3), np.uint8), cam_K=K0.copy()))
    assert out['img'].shape[:2] == (78, 104)  # round(60 * 1.3), round(80 * 1.3)
    np.testing.assert_allclose(out['cam_K'], [[70 * s, 0, 41.3 * s],
                                              [0, 72 * s, 28.6 * s],
                                              [0, 0, 1]])
    out = TRANSFORMS.build(dict(type='DenseResizePad', height=256, width=192,
                                pixel_convention='official'))(
        dict(img=np.zeros((H, W, 3), np.uint8), cam_K=K0.copy()))
    r = 2.4  # min(192 / 80, 256 / 60); 144 rows, offset (256 - 144) // 2
    np.testing.assert_allclose(out['cam_K'], [[70 * r, 0, 41.3 * r],
                                              [0, 72 * r, 28.6 * r + 56],
                                              [0, 0, 1]])
