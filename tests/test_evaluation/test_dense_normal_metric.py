"""NormalMetric: known answers, extras, options and bad input."""
import math

import numpy as np
import pytest
import torch

from sapiens2_mm.evaluation.metrics.dense import NormalMetric, base_dense_metric
from sapiens2_mm.evaluation.metrics.dense.normal_metric import (
    unit_length_official,
)
from sapiens2_mm.evaluation.metrics.dense.sample_access import match_size
from tests.test_models.test_heads.test_dense_postprocess_order import (
    bilinear,
    crop,
    gaussian3,
    unit,
)

from .test_dense_data import make_sample, random_unit, rotate_by


def _run(samples, **kwargs):
    metric = NormalMetric(**kwargs)
    metric.process({}, samples)
    return metric.evaluate(len(samples))


def _case(gt, pred, name='a.png', mask=None, **kw):
    if mask is None:
        mask = torch.ones(gt.shape[-2:], dtype=torch.bool)
    return make_sample(name, mask=mask, gt_normal=gt, pred_normal=pred, **kw)


def test_perfect_prediction():
    gt = random_unit((12, 10))
    res = _run([_case(gt, gt * 2.5)])  # length does not matter
    assert res['normal_mae'] < 0.05 and res['normal_rmse'] < 0.05
    assert res['normal_median_deg'] == 0.25  # centre of the first bin
    for key in ('within_5_0_deg', 'within_30_0_deg', 'extra/within_7_5_deg'):
        assert res[key] == 100.0


def test_known_rotation_gives_that_angle():
    gt = random_unit((16, 12))
    res = _run([_case(gt, rotate_by(gt, 10.2))])
    for key in ('normal_mae', 'normal_rmse', 'extra/normal_median_exact_deg',
                'extra/normal_mae_per_image'):
        assert res[key] == pytest.approx(10.2, abs=2e-3), key
    assert res['normal_median_deg'] == 10.25  # bin [10, 10.5)
    assert res['within_5_0_deg'] == 0 and res['extra/within_7_5_deg'] == 0
    assert res['within_11_25_deg'] == 100.0


def test_hand_computed_two_images():
    """Image A: 10 pixels at 4 deg; image B: 30 pixels at 20 deg."""
    gt_a, gt_b = random_unit((2, 5), seed=3), random_unit((5, 6), seed=4)
    res = _run([_case(gt_a, rotate_by(gt_a, 4.0), 'a'),
                _case(gt_b, rotate_by(gt_b, 20.0), 'b')])
    assert res['normal_mae'] == pytest.approx((10 * 4 + 30 * 20) / 40,
                                              abs=1e-3)
    assert res['normal_rmse'] == pytest.approx(
        math.sqrt((10 * 16 + 30 * 400) / 40), abs=1e-3)
    assert res['extra/normal_mae_per_image'] == pytest.approx(12.0, abs=1e-3)
    assert res['within_5_0_deg'] == pytest.approx(25.0)
    assert res['within_22_5_deg'] == pytest.approx(100.0)
    assert res['extra/normal_median_exact_deg'] == pytest.approx(20.0,
                                                                 abs=1e-3)
    assert res['normal_median_deg'] == 20.25 or res[
        'normal_median_deg'] == 19.75  # 20 deg lands on a bin edge


def test_exact_median_even_count_and_histogram_median():
    """Four pixels at 1, 2, 3, 40 deg: exact median 2.5, histogram 2.25."""
    gt = random_unit((1, 4), seed=5)
    pred = torch.cat([rotate_by(gt[:, :, i:i + 1], a, seed=i)
                      for i, a in enumerate([1.0, 2.0, 3.0, 40.0])], dim=2)
    res = _run([_case(gt, pred)])
    assert res['extra/normal_median_exact_deg'] == pytest.approx(2.5,
                                                                 abs=1e-3)
    # CDF reaches N/2 = 2 in the bin of 2 deg, [2, 2.5) (or [1.5, 2))
    assert res['normal_median_deg'] in (1.75, 2.25)
    assert 'extra/normal_median_exact_deg' not in _run(
        [_case(gt, pred)], exact_median=False)


def test_mask_restricts_pixels():
    gt = random_unit((6, 6))
    pred = rotate_by(gt, 30.5)
    mask = torch.zeros(6, 6, dtype=torch.bool)
    mask[:3] = True
    pred[:, :3] = rotate_by(gt[:, :3], 3.0)
    res = _run([_case(gt, pred, mask=mask)])
    assert res['normal_mae'] == pytest.approx(3.0, abs=1e-3)


def test_non_unit_and_zero_gt_normals():
    """GT length is ignored; zero GT vectors in the mask are left out."""
    gt = random_unit((4, 5))
    pred = rotate_by(gt, 8.0)
    scaled = gt * torch.linspace(0.5, 3.0, 20).view(1, 4, 5)
    base = _run([_case(gt, pred)])
    assert _run([_case(scaled, pred)])['normal_mae'] == pytest.approx(
        base['normal_mae'], abs=1e-4)
    holed = gt.clone()
    holed[:, 0, 0] = 0.0
    pred_bad = pred.clone()
    pred_bad[:, 0, 0] = torch.tensor([0.0, 0.0, 1.0])
    res = _run([_case(holed, pred_bad)])
    assert res['normal_mae'] == pytest.approx(8.0, abs=1e-3)


def test_accepts_data_sample_objects():
    gt = random_unit((5, 4))
    obj = _case(gt, rotate_by(gt, 6.0), as_dict=False)
    assert _run([obj])['normal_mae'] == pytest.approx(6.0, abs=1e-3)


def test_duplicates_skipped_by_default_counted_officially():
    gt = random_unit((3, 3))
    a = _case(gt, rotate_by(gt, 2.0), 'same.png')
    b = _case(gt, rotate_by(gt, 20.0), 'other.png')
    assert _run([a, b, a])['normal_mae'] == pytest.approx(11.0, abs=1e-3)
    assert _run([a, b, a], duplicate_samples='official')['normal_mae'] == \
        pytest.approx(8.0, abs=1e-3)


def test_letterboxed_prediction_crop_padding():
    """A prediction with letterbox padding: crop_padding recovers it."""
    gt = random_unit((8, 6))
    pred = rotate_by(gt, 12.0)
    padded = torch.zeros(3, 8, 10)  # 2 px of padding left and right
    padded[2] = 1.0
    padded[:, :, 2:8] = pred
    case = _case(gt, padded, meta=dict(padding_size=(2, 2, 0, 0)))
    res = _run([case], pred_resize='crop_padding')
    assert res['normal_mae'] == pytest.approx(12.0, abs=1e-3)
    official = _run([case], pred_resize='official')
    assert abs(official['normal_mae'] - 12.0) > 1.0
    with pytest.raises(ValueError, match=r'img\.png.*pred_normal is \(8, 10\)'):
        _run([_case(gt, padded, 'img.png')])


def test_half_size_prediction_crops_the_input_padding_scaled():
    """A 4K-style prediction at half the 16x20 input: the input's padding
    (4, 4, 0, 0) is 2 prediction pixels on each side."""
    gt = random_unit((8, 6))
    pred = rotate_by(gt, 12.0)
    padded = torch.zeros(3, 8, 10)
    padded[2] = 1.0
    padded[:, :, 2:8] = pred
    case = _case(gt, padded, meta=dict(padding_size=(4, 4, 0, 0),
                                       img_shape=(16, 20)))
    res = _run([case], pred_resize='crop_padding')
    assert res['normal_mae'] == pytest.approx(12.0, abs=1e-3)


def test_bad_input_errors_name_the_sample():
    gt = random_unit((4, 4))
    with pytest.raises(ValueError, match=r'bad\.png: gt_mask has shape'):
        _run([_case(gt, gt, 'bad.png', mask=torch.ones(5, 4))])
    with pytest.raises(ValueError, match=r'bad\.png: pred_normal must have 3'):
        _run([_case(gt, gt[:2], 'bad.png')])
    with pytest.raises(KeyError, match=r'bad\.png.*pred_normal'):
        _run([make_sample('bad.png', gt_normal=gt)])


def test_empty_mask_skipped_and_counted(monkeypatch):
    messages = []
    monkeypatch.setattr(base_dense_metric, 'print_log',
                        lambda msg, **kw: messages.append(msg))
    gt = random_unit((4, 4))
    empty = _case(gt, gt, 'empty.png', mask=torch.zeros(4, 4))
    good = _case(gt, rotate_by(gt, 5.5), 'good.png')
    res = _run([empty, good])
    assert res['normal_mae'] == pytest.approx(5.5, abs=1e-3)
    assert messages == ["NormalMetric: skipped 1 sample(s) without a valid "
                        "pixel: ['empty.png']"]
    with pytest.raises(ValueError, match='empty.png'):
        _run([empty, good], empty_mask='error')
    with pytest.raises(ValueError, match='no sample to evaluate'):
        _run([empty])


def test_official_resize_equals_bilinear_interpolation():
    gt = random_unit((8, 6))
    small = rotate_by(random_unit((4, 3), seed=9), 1.0)
    big = torch.nn.functional.interpolate(small[None], size=(8, 6),
                                          mode='bilinear',
                                          align_corners=False)[0]
    a = _run([_case(gt, small)], pred_resize='official')
    b = _run([_case(gt, big)])
    np.testing.assert_allclose(a['normal_mae'], b['normal_mae'], rtol=1e-6)


def test_through_mmengine_evaluator():
    """The Evaluator passes ``to_dict()`` of DenseDataSample objects."""
    from mmengine.evaluator import Evaluator

    from sapiens2_mm.registry import METRICS
    gt = random_unit((6, 5))
    evaluator = Evaluator([METRICS.build(dict(type='NormalMetric'))])
    evaluator.process(data_samples=[
        _case(gt, rotate_by(gt, 9.0), f'{i}.png', as_dict=False)
        for i in range(2)
    ], data_batch={})
    res = evaluator.evaluate(2)
    assert res['normal_mae'] == pytest.approx(9.0, abs=1e-3)


@pytest.mark.parametrize('photo', [(5, 4), (14, 11)])  # shrink, enlarge
def test_crop_padding_follows_the_official_order(photo):
    """pred_resize='crop_padding' brings a letterboxed prediction to the GT
    size in the official demos' order by default (normals unit length
    before the resize, pointmaps blurred before an enlargement);
    'resize_first' only crops and resizes. Reference: the numpy
    re-implementation of test_dense_postprocess_order."""
    rng = np.random.RandomState(3)
    pred = rng.uniform(-3, 3, (3, 10, 8)).astype(np.float32)
    pad = (1, 1, 2, 0)
    sample = dict(padding_size=pad, img_path='p.png')
    raw = torch.from_numpy(pred)
    p64 = pred.astype(np.float64)
    got = match_size(raw, photo, sample, 'crop_padding', 'pred_normal',
                     prepare=unit_length_official)
    expected = bilinear(crop(unit(p64, 1e-8), pad), photo)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)
    plain = match_size(raw, photo, sample, 'crop_padding', 'pred_pointmap')
    np.testing.assert_allclose(plain.numpy(), bilinear(crop(p64, pad), photo),
                               atol=1e-5)
    smoothed = match_size(raw, photo, sample, 'crop_padding', 'pred_pointmap',
                          smooth=True)
    ref = crop(p64, pad)
    if photo[0] > ref.shape[1] or photo[1] > ref.shape[2]:
        for _ in range(4):
            ref = gaussian3(ref)
        assert np.abs(smoothed.numpy() - plain.numpy()).max() > 1e-2
    np.testing.assert_allclose(smoothed.numpy(), bilinear(ref, photo),
                               atol=1e-5)
    # through the metric: the default order scores the official map
    gt = torch.from_numpy(expected.astype(np.float32))
    case = _case(gt, raw, meta=dict(padding_size=pad))
    res = _run([case], pred_resize='crop_padding')
    assert res['normal_mae'] == pytest.approx(0.0, abs=0.05)
    res = _run([case], pred_resize='crop_padding',
               pred_resize_order='resize_first')
    assert res['normal_mae'] > 0.5


def test_nan_predictions_are_the_worst_angle_and_reported(monkeypatch):
    """4 pixels with GT +z: 2 predicted +x (90 deg), 2 NaN. Before, the NaN
    angles fell into histogram bin 0: ``normal_median_deg`` 0.25, the best
    value. Scored as 180 deg: angles (90, 90, 180, 180)."""
    from sapiens2_mm.evaluation.metrics.dense import base_dense_metric
    messages = []
    monkeypatch.setattr(base_dense_metric, 'print_log',
                        lambda msg, **kw: messages.append(msg))
    gt = torch.zeros(3, 2, 2)
    gt[2] = 1.0
    pred = torch.zeros(3, 2, 2)
    pred[0, 0] = 1.0
    pred[:, 1] = float('nan')
    pred[0, 1, 1] = float('inf')  # inf in one channel is non-finite too
    res = _run([_case(gt, pred)])
    assert res['normal_mae'] == pytest.approx((90 + 90 + 180 + 180) / 4)
    assert res['normal_rmse'] == pytest.approx(
        math.sqrt((2 * 90**2 + 2 * 180**2) / 4))
    # the CDF reaches N/2 = 2 in the bin of 90 deg, [90, 90.5)
    assert res['normal_median_deg'] == 90.25
    assert res['extra/normal_median_exact_deg'] == pytest.approx(135.0)
    assert res['within_30_0_deg'] == 0.0
    assert res['extra/nonfinite_pred_pixels'] == 2
    assert 'non-finite prediction' in ' '.join(messages)


def test_finite_predictions_report_no_nonfinite_key():
    gt = random_unit((4, 4))
    assert 'extra/nonfinite_pred_pixels' not in _run([_case(gt, gt)])
