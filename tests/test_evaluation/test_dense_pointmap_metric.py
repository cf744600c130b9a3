"""PointmapMetric: known answers, alignments, mmseg DepthMetric, camera errors."""
import math

import numpy as np
import pytest
import torch
from mmengine.structures import PixelData
from mmseg.evaluation import DepthMetric
from scipy.ndimage import correlate

from sapiens2_mm.evaluation.metrics.dense import PointmapMetric
from sapiens2_mm.evaluation.metrics.dense.alignment import align, fit_alignment
from sapiens2_mm.evaluation.metrics.dense.geometry import sobel_normals

from .test_dense_data import camera_pointmap, make_sample

CS = 1.25  # canonical_scale (768 / fx)
DEPTH_KEYS = ('abs_rel', 'sq_rel', 'rmse', 'rmse_log', 'silog', 'd1', 'd2',
              'd3')


def _case(gt_metric, pred_metric, name="a.png", mask=None, meta=None,
          **fields):
    meta = dict(dict(pred_scale=CS, canonical_scale=CS), **(meta or {}))
    if mask is None:
        mask = torch.ones(gt_metric.shape[-2:], dtype=torch.bool)
    return make_sample(name, mask=mask, meta=meta,
                       gt_pointmap=gt_metric * CS, pred_pointmap=pred_metric,
                       **fields)


def _run(samples, **kwargs):
    metric = PointmapMetric(**kwargs)
    metric.process({}, samples)
    return metric.evaluate(len(samples))


def _interior(h=24, w=18):
    """Mask without the first/last row and column: there reflect-101 makes
    one Sobel derivative 0, so both normals are 0 and the angle is 90 deg
    (the official definition, tested below)."""
    mask = torch.zeros(h, w, dtype=torch.bool)
    mask[1:-1, 1:-1] = True
    return mask


def test_perfect_prediction():
    gt = camera_pointmap()
    res = _run([_case(gt, gt, mask=_interior())])
    for key in ('l2_mean', 'x_mae', 'rmse'):
        assert res[key] == pytest.approx(0.0, abs=1e-6), key
    assert res['normal_mae'] < 0.05  # float32 acos of a dot product ~1
    assert res['within_05_cm'] == 1.0 and res['within_5_0_deg'] == 1.0
    for mode in ('none', 'scale', 'affine', 'median'):
        assert res[f'pointmap_{mode}/rel_p'] == pytest.approx(0, abs=1e-6)
        assert res[f'pointmap_{mode}/delta1_p'] == 1.0
        for key in ('abs_rel', 'rmse', 'silog'):
            assert res[f'depth_{mode}/{key}'] == pytest.approx(0, abs=1e-6)
        assert res[f'depth_{mode}/d1'] == 1.0
    assert res['extra/scale_rel_err'] == 0.0


def test_scaled_prediction_zero_only_under_scale_alignment():
    gt = camera_pointmap()
    res = _run([_case(gt, 1.3 * gt)])
    for mode in ('scale', 'affine', 'median'):
        assert res[f'pointmap_{mode}/rel_p'] == pytest.approx(0, abs=1e-6)
        assert res[f'depth_{mode}/abs_rel'] == pytest.approx(0, abs=1e-6)
    # none: ||1.3p - p|| / ||p|| = 0.3 everywhere; 0.3 >= 0.25 min(1, 1.3)
    assert res['pointmap_none/rel_p'] == pytest.approx(0.3, rel=1e-6)
    assert res['pointmap_none/delta1_p'] == 0.0
    assert res['depth_none/abs_rel'] == pytest.approx(0.3, rel=1e-6)
    assert res['depth_none/d1'] == 0.0 and res['depth_none/d2'] == 1.0
    assert res['depth_none/d3'] == 1.0
    depth = gt[2].double()
    assert res['depth_none/sq_rel'] == pytest.approx(
        float(0.09 * depth.mean()), rel=1e-5)
    assert res['depth_none/rmse'] == pytest.approx(
        float(0.3 * (depth**2).mean().sqrt()), rel=1e-5)
    assert res['depth_none/rmse_log'] == pytest.approx(math.log(1.3), rel=1e-6)
    assert res['depth_none/silog'] == pytest.approx(
        math.sqrt(0.5) * math.log(1.3), rel=1e-6)
    # the official metrics compare canonical maps: pred * pred_scale
    assert res['l2_mean'] == pytest.approx(
        0.3 * float((gt * CS).norm(dim=0).mean()), rel=1e-5)


def test_shifted_prediction_zero_only_under_affine_alignment():
    gt = camera_pointmap()
    pred = 0.8 * gt + torch.tensor([0.1, -0.2, 0.5]).view(3, 1, 1)
    res = _run([_case(gt, pred)])
    assert res['pointmap_affine/rel_p'] == pytest.approx(0, abs=1e-6)
    assert res['pointmap_scale/rel_p'] > 1e-3
    assert res['depth_affine/abs_rel'] == pytest.approx(0, abs=1e-6)
    assert res['depth_median/abs_rel'] > 1e-3


def test_alignment_solvers_hand_computed():
    pred = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    gt = torch.tensor([2.0, 3.0, 9.0], dtype=torch.float64)
    s, _ = fit_alignment(pred, gt, 'scale')
    assert float(s) == pytest.approx((2 + 6 + 36) / (1 + 4 + 16))
    s, t = fit_alignment(pred, gt, 'affine')
    a, b = np.polyfit(pred.numpy(), gt.numpy(), 1)
    assert (float(s), float(t)) == pytest.approx((a, b))
    s, _ = fit_alignment(pred, gt, 'median')
    assert float(s) == pytest.approx(3.0 / 2.0)
    pts = torch.tensor([[3.0, 4, 0], [0, 0, 1], [0, 6, 8]],
                       dtype=torch.float64)
    s, _ = fit_alignment(pts, 2 * pts, 'median')  # norms 5, 1, 10
    assert float(s) == 2.0
    assert torch.equal(align(pts, gt, 'none'), pts)
    with pytest.raises(ValueError, match='alignment must be one of'):
        fit_alignment(pred, gt, 'sim3')


def test_delta1_p_hand_computed():
    gt = torch.ones(3, 1, 4) * torch.tensor([0.0, 0.0, 2.0]).view(3, 1, 1)
    pred = gt.clone()
    # errors along x: 0.1, 0.4, 0.6, 0.0 (thresholds 0.25 * 2 = 0.5)
    pred[0, 0] = torch.tensor([0.1, 0.4, 0.6, 0.0])
    res = _run([_case(gt, pred)], alignments=('none', ))
    assert res['pointmap_none/delta1_p'] == pytest.approx(0.75)
    assert res['pointmap_none/rel_p'] == pytest.approx(1.1 / 4 / 2.0,
                                                        rel=1e-6)
    assert 'pointmap_scale/rel_p' not in res


def test_depth_metrics_equal_mmseg_depth_metric():
    g = torch.Generator().manual_seed(0)
    ours = PointmapMetric(alignments=('none', ))
    theirs = DepthMetric()
    for i in range(3):
        gt_pm = camera_pointmap(seed=i)
        gt_d = 1.0 + 3.0 * torch.rand((1, 24, 18), generator=g)
        pred_d = gt_d * (0.7 + 0.6 * torch.rand((1, 24, 18), generator=g))
        ours.process({}, [_case(gt_pm, gt_pm, f'{i}.png', gt_depth=gt_d,
                                pred_depth=pred_d)])
        theirs.process({}, [dict(pred_depth_map=dict(data=pred_d),
                                 gt_depth_map=dict(data=gt_d))])
    a, b = ours.evaluate(3), theirs.evaluate(3)
    for key in DEPTH_KEYS:
        assert a[f'depth_none/{key}'] == pytest.approx(b[key], rel=1e-5), key
    assert 0 < a['depth_none/d1'] < 1


def test_sobel_normals_match_explicit_5x5_reflect101_filter():
    pm = camera_pointmap(h=9, w=7, seed=2).permute(1, 2, 0)
    smooth = np.array([1, 4, 6, 4, 1], dtype=np.float64)
    deriv = np.array([-1, -2, 0, 2, 1], dtype=np.float64)
    pts = pm.numpy().astype(np.float64)
    gx = np.stack([correlate(pts[..., c], np.outer(smooth, deriv),
                             mode='mirror') for c in range(3)], axis=-1)
    gy = np.stack([correlate(pts[..., c], np.outer(deriv, smooth),
                             mode='mirror') for c in range(3)], axis=-1)
    n = np.cross(gx, gy)
    n /= np.linalg.norm(n, axis=2, keepdims=True) + 1e-6
    np.testing.assert_allclose(sobel_normals(pm), n, atol=1e-5)


def test_border_normals_are_zero_hence_90_degrees():
    gt = camera_pointmap()
    res = _run([_case(gt, gt)], alignments=())
    h, w = gt.shape[-2:]
    border = 2 * (h + w) - 4
    assert res['normal_mae'] == pytest.approx(90.0 * border / (h * w),
                                              abs=1e-2)


def test_tilted_plane_gives_the_tilt_angle():
    """Sobel normals of planes: a tilt by theta gives theta inside."""
    h, w, theta = 16, 12, 17.0
    v, u = torch.meshgrid(torch.arange(h, dtype=torch.float64),
                          torch.arange(w, dtype=torch.float64), indexing='ij')
    x, y = 0.01 * u, 0.01 * v
    gt = torch.stack([x, y, torch.full_like(x, 2.0)]).float()
    pred = torch.stack([x, y, 2.0 + math.tan(math.radians(theta)) * y]).float()
    mask = torch.zeros(h, w, dtype=torch.bool)
    mask[2:-2, 2:-2] = True  # away from the reflected border
    res = _run([_case(gt, pred, mask=mask)], alignments=())
    assert res['normal_mae'] == pytest.approx(theta, abs=1e-2)
    assert res['within_30_0_deg'] == 1.0 and res['within_11_25_deg'] == 0.0


def test_scale_and_fov_errors():
    gt = camera_pointmap(h=24, w=48)
    k = np.array([[400.0, 0, 24], [0, 400.0, 12], [0, 0, 1]])
    meta = dict(pred_scale=0.9, canonical_scale=1.2, pred_focal_length=500.0,
                cam_K=k)
    res = _run([make_sample('a.png', meta=meta, gt_pointmap=gt * 1.2,
                            pred_pointmap=gt)])
    assert res['extra/scale_rel_err'] == pytest.approx(0.25)
    expected = math.degrees(2 * math.atan(24 / 400) - 2 * math.atan(24 / 500))
    assert res['extra/fov_x_err_deg'] == pytest.approx(expected)
    bare = _run([make_sample('b.png', meta=dict(pred_scale=1.0,
                                                canonical_scale=1.0),
                             gt_pointmap=gt, pred_pointmap=gt)])
    assert 'extra/fov_x_err_deg' not in bare


def test_canonical_space_option():
    gt = camera_pointmap()
    metric_pred = 1.1 * gt
    a = _run([_case(gt, metric_pred)])
    b = _run([_case(gt, metric_pred * CS)], pred_pointmap_space='canonical')
    for key in ('l2_mean', 'pointmap_none/rel_p', 'depth_none/abs_rel'):
        assert a[key] == pytest.approx(b[key], rel=1e-5), key


def test_bad_input():
    gt = camera_pointmap()
    with pytest.raises(ValueError, match=r'x\.png: pred_scale is None'):
        _run([make_sample('x.png', meta=dict(canonical_scale=1.0),
                          gt_pointmap=gt, pred_pointmap=gt)])
    with pytest.raises(ValueError, match=r'x\.png: canonical_scale is None'):
        _run([make_sample('x.png', meta=dict(pred_scale=1.0),
                          gt_pointmap=gt, pred_pointmap=gt)])
    assert 'l2_mean' in _run([make_sample(
        'x.png', meta=dict(pred_scale=1.0), gt_pointmap=gt,
        pred_pointmap=gt)], alignments=())
    with pytest.raises(ValueError, match=r'x\.png: pred_pointmap is'):
        _run([_case(gt, gt[:, :-1], 'x.png')])
    with pytest.raises(ValueError, match=r'x\.png: gt_mask has shape'):
        _run([_case(gt, gt, 'x.png', mask=torch.ones(3, 3))])
    with pytest.raises(ValueError, match='alignments entry'):
        PointmapMetric(alignments=('sim3', ))


def test_non_finite_gt_pixels_left_out():
    gt = camera_pointmap()
    pred = 1.3 * gt
    broken = gt.clone()
    broken[:, 0, 0] = float('nan')
    a = _run([_case(gt, pred, mask=torch.ones(24, 18).index_put_(
        (torch.tensor([0]), torch.tensor([0])), torch.tensor(0.0)))])
    b = _run([_case(broken, pred)])
    for key in ('rmse', 'pointmap_none/rel_p'):
        assert np.isfinite(b[key])
    assert b['pointmap_none/rel_p'] == pytest.approx(a['pointmap_none/rel_p'])


def test_pixeldata_objects_accepted():
    gt = camera_pointmap()
    sample = _case(gt, gt, as_dict=False)
    assert isinstance(sample.gt_pointmap, PixelData)
    assert _run([sample])['l2_mean'] == pytest.approx(0.0, abs=1e-5)


def test_nonfinite_predicted_points_are_counted_and_never_good(monkeypatch):
    """A perfect pointmap but for 3 NaN pixels: the distance means are NaN
    (not 0), the thresholds count only the finite pixels, 3 are reported."""
    from sapiens2_mm.evaluation.metrics.dense import base_dense_metric
    messages = []
    monkeypatch.setattr(base_dense_metric, 'print_log',
                        lambda msg, **kw: messages.append(msg))
    gt = camera_pointmap(8, 6)
    pred = gt.clone()
    pred[:, 0, :3] = float('nan')
    res = _run([_case(gt, pred)], alignments=())
    assert res['extra/nonfinite_pred_pixels'] == 3
    assert math.isnan(res['l2_mean']) and math.isnan(res['rmse'])
    assert res['within_05_cm'] == pytest.approx(45 / 48)
    assert 'non-finite prediction' in ' '.join(messages)
    assert 'extra/nonfinite_pred_pixels' not in _run([_case(gt, gt)],
                                                     alignments=())


def test_fov_error_uses_the_original_intrinsics_after_a_resize():
    """The test transform letterboxes a 90x120 photo by r = 0.5 into the
    network input, so ``cam_K`` has fx = 50 while the original camera (and
    the predicted focal length, in original pixels) has fx ~ 100. Before,
    fx = 50 was compared with 101: 38.96 deg instead of 0.50 deg."""
    gt = camera_pointmap(h=90, w=120)
    ori_k = np.array([[100.0, 0, 60], [0, 100.0, 45], [0, 0, 1]])
    resized_k = np.diag([0.5, 0.5, 1.0]) @ ori_k
    meta = dict(pred_scale=1.0, canonical_scale=1.0, pred_focal_length=101.0,
                cam_K=resized_k, ori_cam_K=ori_k, ori_shape=(90, 120),
                img_shape=(64, 64))
    res = _run([make_sample('a.png', meta=meta, gt_pointmap=gt,
                            pred_pointmap=gt)], alignments=())
    # hand formula: horizontal FoV 2 atan(W / 2f), W = 120 original pixels
    expected = math.degrees(2 * math.atan(60 / 100) - 2 * math.atan(60 / 101))
    assert expected == pytest.approx(0.5019, abs=1e-4)
    assert res['extra/fov_x_err_deg'] == pytest.approx(expected, rel=1e-9)
    # without ori_cam_K a resized cam_K is not taken for the original's
    del meta['ori_cam_K']
    res = _run([make_sample('a.png', meta=meta, gt_pointmap=gt,
                            pred_pointmap=gt)], alignments=())
    assert 'extra/fov_x_err_deg' not in res
