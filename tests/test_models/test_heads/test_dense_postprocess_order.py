"""Post-processing order of the dense heads against a re-implementation.

The reference below is written here in float64 numpy, independently of the
package and of PyTorch's resize / blur kernels: a bilinear resize with
half-pixel centres (``align_corners=False``, no antialiasing) and a 3x3
Gaussian blur with reflected borders. Each order is checked on predictions
that make the orders differ, for a photo smaller than the prediction
(shrink) and one larger (enlargement). PyTorch computes the bilinear source
positions in float32, hence the 1e-5 bounds; the orders differ by > 1e-2.
"""
import numpy as np
import pytest
import torch

from sapiens2_mm.registry import MODELS

# (letterboxed prediction H, W), padding (left, right, top, bottom), photo.
SHRINK = ((16, 12), (0, 0, 2, 2), (9, 10))
ENLARGE = ((16, 12), (1, 1, 0, 0), (37, 23))
CASES = {'shrink': SHRINK, 'enlarge': ENLARGE}


def bilinear(img: np.ndarray, size) -> np.ndarray:
    """(C, h, w) -> (C, H, W), half-pixel centres, edge-clamped."""
    _, h, w = img.shape
    out_h, out_w = size

    def axis(n_in, n_out):
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        src = np.maximum(src, 0.0)
        lo = np.minimum(np.floor(src).astype(int), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, src - lo

    y0, y1, fy = axis(h, out_h)
    x0, x1, fx = axis(w, out_w)
    top = img[:, y0][:, :, x0] * (1 - fx) + img[:, y0][:, :, x1] * fx
    bottom = img[:, y1][:, :, x0] * (1 - fx) + img[:, y1][:, :, x1] * fx
    return top * (1 - fy)[:, None] + bottom * fy[:, None]


def gaussian3(img: np.ndarray, sigma: float = 0.8) -> np.ndarray:
    """3x3 Gaussian blur of (C, h, w) with reflected (not repeated) edges."""
    k = np.exp(-0.5 * (np.array([-1.0, 0.0, 1.0]) / sigma) ** 2)
    k /= k.sum()
    pad = np.pad(img, ((0, 0), (1, 1), (1, 1)), mode='reflect')
    out = np.zeros_like(img)
    h, w = img.shape[1:]
    for dy in range(3):
        for dx in range(3):
            out += k[dy] * k[dx] * pad[:, dy:dy + h, dx:dx + w]
    return out


def crop(img: np.ndarray, pad) -> np.ndarray:
    left, right, top, bottom = pad
    return img[:, top:img.shape[1] - bottom, left:img.shape[2] - right]


def unit(img: np.ndarray, eps: float) -> np.ndarray:
    return img / np.maximum(np.linalg.norm(img, axis=0, keepdims=True), eps)


def _head(kind, **kwargs):
    return MODELS.build(dict(type=kind, in_channels=8, upsample_channels=(8,),
                             conv_out_channels=(4,), conv_kernel_sizes=(3,),
                             loss_decode=[], **kwargs))


def _prediction(shape, seed, low=-3.0, high=3.0):
    rng = np.random.RandomState(seed)
    return rng.uniform(low, high, (3, ) + shape).astype(np.float32)


def _meta(pad, photo):
    return dict(padding_size=pad, ori_shape=photo, img_path='p.jpg')


@pytest.mark.parametrize('case', CASES)
def test_normal_orders(case):
    shape, pad, photo = CASES[case]
    raw = _prediction(shape, 0)
    raw64 = raw.astype(np.float64)
    official = bilinear(crop(unit(raw64, 1e-8), pad), photo)
    renorm = unit(bilinear(crop(raw64, pad), photo), 1e-6)
    assert np.abs(official - renorm).max() > 1e-2  # the orders differ
    out = torch.from_numpy(raw)[None]
    got = _head('NormalHead').postprocess_sample(out, 0, _meta(pad, photo))
    np.testing.assert_allclose(got[0]['pred_normal'].numpy(), official,
                               atol=1e-5)
    # not re-normalized: between network pixels the vectors are shorter
    assert np.linalg.norm(official, axis=0).min() < 0.99
    got = _head('NormalHead', normalize='after_resize').postprocess_sample(
        out, 0, _meta(pad, photo))
    np.testing.assert_allclose(got[0]['pred_normal'].numpy(), renorm,
                               atol=1e-5)


@pytest.mark.parametrize('case', CASES)
def test_albedo_orders(case):
    shape, pad, photo = CASES[case]
    raw = _prediction(shape, 1, -0.5, 1.5)
    raw64 = raw.astype(np.float64)
    official = bilinear(crop(np.clip(raw64, 0, 1), pad), photo)
    after = np.clip(bilinear(crop(raw64, pad), photo), 0, 1)
    assert np.abs(official - after).max() > 1e-2
    out = torch.from_numpy(raw)[None]
    fields, _ = _head('AlbedoHead').postprocess_sample(out, 0,
                                                       _meta(pad, photo))
    np.testing.assert_allclose(fields['pred_albedo'].numpy(), official,
                               atol=1e-5)
    np.testing.assert_allclose(fields['pred_albedo_raw'].numpy(),
                               bilinear(crop(raw64, pad), photo), atol=1e-5)
    fields, _ = _head('AlbedoHead', clamp='after_resize').postprocess_sample(
        out, 0, _meta(pad, photo))
    np.testing.assert_allclose(fields['pred_albedo'].numpy(), after,
                               atol=1e-5)


@pytest.mark.parametrize('case', CASES)
def test_pointmap_orders(case):
    shape, pad, photo = CASES[case]
    raw = _prediction(shape, 2, 0.5, 4.0)
    scale = 0.8
    metric = crop(raw.astype(np.float64) / scale, pad)
    smoothed = metric
    enlarging = photo[0] > metric.shape[1] or photo[1] > metric.shape[2]
    assert enlarging == (case == 'enlarge')
    if enlarging:
        for _ in range(4):
            smoothed = gaussian3(smoothed)
    official = bilinear(smoothed, photo)
    plain = bilinear(metric, photo)
    if enlarging:
        assert np.abs(official - plain).max() > 1e-1
    else:
        np.testing.assert_array_equal(official, plain)
    kwargs = dict(scale_conv_out_channels=(4,), scale_conv_kernel_sizes=(1,),
                  scale_final_layer=(4, 1), scale_pool_size=(1, 1))
    outputs = (torch.from_numpy(raw)[None], torch.tensor([[scale]]))
    for smoothing, expected in (('official', official), ('none', plain)):
        head = _head('PointmapHead', resize_smoothing=smoothing, **kwargs)
        fields, info = head.postprocess_sample(outputs, 0, _meta(pad, photo))
        np.testing.assert_allclose(fields['pred_pointmap'].numpy(), expected,
                                   rtol=1e-5, atol=1e-5)
        assert torch.equal(fields['pred_depth'], fields['pred_pointmap'][2:3])
        assert info['pred_scale'] == pytest.approx(scale)


def test_bad_option_values_are_named():
    with pytest.raises(ValueError, match='normalize'):
        _head('NormalHead', normalize='never')
    with pytest.raises(ValueError, match='clamp'):
        _head('AlbedoHead', clamp='sometimes')
    head = _head('NormalHead')
    head.set_postprocess(normalize='after_resize')
    assert head.normalize == 'after_resize'
    with pytest.raises(ValueError, match='resize_smoothing'):
        head.set_postprocess(resize_smoothing='none')
