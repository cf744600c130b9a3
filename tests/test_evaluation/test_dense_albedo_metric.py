"""AlbedoMetric: known answers, scale-invariant extras, PSNR range, options."""
import math

import numpy as np
import pytest
import torch

from sapiens2_mm.evaluation.metrics.dense import AlbedoMetric
from sapiens2_mm.evaluation.metrics.dense.albedo_errors import local_mse

from .test_dense_data import make_sample


def _albedo(h=40, w=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 0.1 + 0.8 * torch.rand((3, h, w), generator=g)


def _case(gt, pred, name='a.png', mask=None):
    if mask is None:
        mask = torch.ones(gt.shape[-2:], dtype=torch.bool)
    return make_sample(name, mask=mask, gt_albedo=gt, pred_albedo=pred)


def _run(samples, **kwargs):
    metric = AlbedoMetric(**kwargs)
    metric.process({}, samples)
    return metric.evaluate(len(samples))


def test_perfect_prediction():
    gt = _albedo()
    res = _run([_case(gt, gt)])
    assert res['mae'] == 0 and res['grad_l1'] == 0
    assert res['ssim'] == pytest.approx(1.0, abs=1e-6)
    assert res['psnr'] == pytest.approx(120.0)  # MSE clamped at 1e-12
    assert res['extra/si_mse'] == 0 and res['extra/lmse'] == 0


def test_gain_is_free_for_scale_invariant_errors():
    gt = _albedo()
    gains = torch.tensor([0.5, 0.7, 0.9]).view(3, 1, 1)
    for pred in (0.6 * gt, gains * gt):
        res = _run([_case(gt, pred)])
        assert res['extra/si_mse'] == pytest.approx(0, abs=1e-12)
        assert res['extra/lmse'] == pytest.approx(0, abs=1e-12)
        assert res['mae'] > 0.01


def test_constant_offset_hand_computed():
    gt = _albedo()
    res = _run([_case(gt, gt + 0.1)])
    assert res['mae'] == pytest.approx(0.1, rel=1e-5)
    assert res['rmse'] == pytest.approx(0.1, rel=1e-5)
    assert res['psnr'] == pytest.approx(20.0, abs=1e-4)
    assert res['grad_l1'] == pytest.approx(0, abs=1e-6)


def test_per_image_and_dataset_psnr():
    """Offsets 0.1 (100 px) and 0.01 (300 px)."""
    a, b = _albedo(10, 10, 1), _albedo(15, 20, 2)
    res = _run([_case(a, a + 0.1, 'a'), _case(b, b + 0.01, 'b')])
    assert res['extra/psnr_per_image'] == pytest.approx(30.0, abs=1e-3)
    mse = (100 * 0.01 + 300 * 1e-4) / 400
    assert res['psnr'] == pytest.approx(10 * math.log10(1 / mse), abs=1e-3)


def test_masked_ssim_of_constant_images():
    """Zero variance: SSIM = (2ab + C1) / (a^2 + b^2 + C1) on every window."""
    gt = torch.full((3, 20, 16), 0.5)
    mask = torch.zeros(20, 16, dtype=torch.bool)
    mask[:, :9] = True
    res = _run([_case(gt, torch.full_like(gt, 0.6), mask=mask)])
    c1 = 1e-4
    # float32 variances (as officially) leave ~1e-8 noise against C2 = 9e-4
    assert res['ssim'] == pytest.approx((0.6 + c1) / (0.25 + 0.36 + c1),
                                        rel=1e-4)


def test_gradient_l1_hand_computed():
    gt = torch.zeros(3, 2, 3)
    pred = gt.clone()
    pred[:, 0, 1] = 0.3  # affects 2 horizontal pairs (row 0) + 1 vertical
    res = _run([_case(gt, pred)])
    # pairs: horizontal 2 x 2 = 4, vertical 3: errors 0.3 at 3 of 7 pairs
    assert res['grad_l1'] == pytest.approx(3 * 0.3 / 7, rel=1e-5)


def _lmse_loops(pred, gt, mask, window=20, stride=10):
    """Straightforward LMSE: explicit windows and channels."""
    pred, gt = pred.double().numpy(), gt.double().numpy()
    m = mask.double().numpy()
    err = total = 0.0
    h, w = m.shape
    for i in range(0, h - window + 1, stride):
        for j in range(0, w - window + 1, stride):
            mw = m[i:i + window, j:j + window]
            for c in range(3):
                x = pred[c, i:i + window, j:j + window] * mw
                y = gt[c, i:i + window, j:j + window] * mw
                k = (x * y).sum() / (x * x).sum() if (x * x).sum() else 0.0
                err += ((k * x - y)**2).sum()
                total += (y * y).sum()
    return err / total


def test_lmse_equals_explicit_windows():
    gt, pred = _albedo(45, 38, 3), _albedo(45, 38, 4)
    mask = torch.rand(45, 38, generator=torch.Generator().manual_seed(5)) > .3
    assert local_mse(pred, gt, mask) == pytest.approx(
        _lmse_loops(pred, gt, mask), rel=1e-9)
    res = _run([_case(gt, pred, mask=mask)])
    assert res['extra/lmse'] == pytest.approx(_lmse_loops(pred, gt, mask),
                                              rel=1e-9)


def test_si_mse_hand_computed():
    gt = torch.tensor([1.0, 2.0]).view(1, 1, 2).repeat(3, 1, 1)
    pred = torch.tensor([1.0, 1.0]).view(1, 1, 2).repeat(3, 1, 1)
    # k = 3/2: residuals 0.5, -0.5 -> mean square 0.25
    assert _run([_case(gt, pred)])['extra/si_mse'] == pytest.approx(0.25)


def test_psnr_range_default_vs_official_first_batch():
    """The official range is fixed by the first batch and never reset."""
    big = _albedo() * 255.0
    small = _albedo(seed=7)
    pred = small + 0.1
    official = AlbedoMetric(psnr_data_range='official')
    official.process({}, [_case(big, big, 'big')])
    official.evaluate(1)
    official.process({}, [_case(small, pred, 'small')])
    assert official.evaluate(1)['psnr'] == pytest.approx(
        10 * math.log10(255**2 / 0.01), abs=1e-3)
    assert _run([_case(small, pred)])['psnr'] == pytest.approx(20.0, abs=1e-3)
    with pytest.raises(ValueError, match='psnr_data_range'):
        AlbedoMetric(psnr_data_range='auto')


def test_raw_predictions_by_default_and_clamp_option():
    gt = torch.ones(3, 4, 4)
    pred = torch.full((3, 4, 4), 1.2)
    assert _run([_case(gt, pred)])['mae'] == pytest.approx(0.2)
    assert _run([_case(gt, pred)], clamp_pred=True)['mae'] == 0


def test_bad_input():
    gt = _albedo(8, 6)
    with pytest.raises(ValueError, match=r'b\.png: pred_albedo is \(8, 5\)'):
        _run([_case(gt, gt[:, :, :5], 'b.png')])
    with pytest.raises(ValueError, match=r'b\.png: gt_mask has shape'):
        _run([_case(gt, gt, 'b.png', mask=torch.ones(6, 8))])
    empty = _case(gt, gt, 'e.png', mask=torch.zeros(8, 6))
    res = _run([empty, _case(gt, gt + 0.1, 'g.png')])
    assert res['mae'] == pytest.approx(0.1, rel=1e-5)
    with pytest.raises(ValueError, match='e.png'):
        _run([empty], empty_mask='error')


def test_crop_padding_option():
    gt = _albedo(8, 6)
    padded = torch.zeros(3, 12, 6)
    padded[:, 2:10] = gt + 0.05
    sample = _case(gt, padded)
    sample['padding_size'] = (0, 0, 2, 2)
    res = _run([sample], pred_resize='crop_padding')
    assert res['mae'] == pytest.approx(0.05, rel=1e-5)
    assert np.isfinite(_run([sample], pred_resize='official')['mae'])


def test_nonfinite_predictions_are_counted_and_never_good(monkeypatch):
    """A perfect prediction but for one NaN and one inf pixel (one of them
    outside the mask): the means are not finite, one pixel is reported."""
    from sapiens2_mm.evaluation.metrics.dense import base_dense_metric
    messages = []
    monkeypatch.setattr(base_dense_metric, 'print_log',
                        lambda msg, **kw: messages.append(msg))
    gt = _albedo(6, 5)
    pred = gt.clone()
    pred[:, 0, 0] = float('nan')
    pred[1, 5, 4] = float('inf')
    mask = torch.ones(6, 5, dtype=torch.bool)
    mask[5, 4] = False
    res = _run([_case(gt, pred, mask=mask)])
    assert res['extra/nonfinite_pred_pixels'] == 1
    assert not math.isfinite(res['mae']) and not math.isfinite(res['psnr'])
    assert 'non-finite prediction' in ' '.join(messages)
    clamped = _run([_case(gt, pred, mask=mask)], clamp_pred=True)
    assert clamped['extra/nonfinite_pred_pixels'] == 1
    assert 'extra/nonfinite_pred_pixels' not in _run([_case(gt, gt)])
