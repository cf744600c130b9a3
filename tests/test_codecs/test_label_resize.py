"""Banded resize + argmax against PyTorch's full-image bilinear resize."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sapiens2_mm.codecs.label_resize import (
    label_dtype,
    nonfinite_pixels,
    resize_argmax,
)


@pytest.mark.parametrize('size,align', [((301, 217), False), ((64, 48), False),
                                        ((20, 13), False), ((97, 301), True)])
def test_equals_full_interpolate_argmax(size, align):
    torch.manual_seed(0)
    logits = torch.randn(29, 32, 24)
    ref = F.interpolate(logits[None], size=size, mode='bilinear',
                        align_corners=align)[0]
    # a tiny band forces many bands
    out = resize_argmax(logits, size, align, tile_bytes=4 * 29 * size[1] * 7)
    assert out.dtype == np.uint8 and out.shape == size
    top2 = ref.topk(2, dim=0).values
    decided = (top2[0] - top2[1]).numpy() > 1e-5
    assert decided.mean() > 0.99
    np.testing.assert_array_equal(out[decided], ref.argmax(0).numpy()[decided])


@pytest.mark.parametrize('size,align', [((301, 217), False), ((97, 301), True)])
def test_one_band_path_equals_full_interpolate_argmax(size, align):
    """Default tile size: the whole map in one PyTorch interpolation."""
    torch.manual_seed(0)
    logits = torch.randn(29, 32, 24)
    ref = F.interpolate(logits[None], size=size, mode='bilinear',
                        align_corners=align)[0]
    out = resize_argmax(logits, size, align)
    assert out.dtype == np.uint8 and out.shape == size
    top2 = ref.topk(2, dim=0).values
    decided = (top2[0] - top2[1]).numpy() > 1e-5
    assert decided.mean() > 0.99
    np.testing.assert_array_equal(out[decided], ref.argmax(0).numpy()[decided])
    # and the banded path agrees with it
    banded = resize_argmax(logits, size, align, tile_bytes=4 * 29 * size[1])
    np.testing.assert_array_equal(out[decided], banded[decided])


@pytest.mark.parametrize('tile_bytes', [4, 64 << 20])  # banded, one band
def test_binary_model_thresholds_the_sigmoid(tile_bytes):
    logits = torch.tensor([[[-2.0, 0.0], [0.5, 3.0]]])
    out = resize_argmax(logits, (2, 2), threshold=0.5, tile_bytes=tile_bytes)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [[0, 0], [1, 1]])


def test_label_dtype():
    assert label_dtype(29) == np.uint8 and label_dtype(256) == np.uint8
    assert label_dtype(300) == np.uint16


def _smooth_logits(num_classes, h, w, seed=0):
    """Large regions with one winning class, as a trained segmenter gives."""
    torch.manual_seed(seed)
    coarse = torch.randn(1, num_classes, max(1, h // 16), max(1, w // 16))
    coarse *= 4
    return F.interpolate(coarse, size=(h, w), mode='bicubic')[0]


def _reference(logits, size, align):
    return F.interpolate(logits[None], size=size, mode='bilinear',
                         align_corners=align)[0]


@pytest.mark.parametrize('size,align', [((301, 217), False), ((20, 13), False),
                                        ((257, 401), True)])
def test_boundary_only_path_equals_full_interpolate_argmax(size, align,
                                                           monkeypatch):
    import sapiens2_mm.codecs.label_resize as module
    logits = _smooth_logits(29, 64, 48)
    calls = []
    real = module._boundary_only
    monkeypatch.setattr(module, '_boundary_only',
                        lambda *a: calls.append(1) or real(*a))
    out = resize_argmax(logits, size, align, tile_bytes=4 * 29 * size[1] * 5)
    assert calls, 'smooth logits should take the boundary-only path'
    ref = _reference(logits, size, align)
    top2 = ref.topk(2, dim=0).values
    decided = (top2[0] - top2[1]).numpy() > 1e-5
    assert decided.mean() > 0.99
    np.testing.assert_array_equal(out[decided], ref.argmax(0).numpy()[decided])


def test_noisy_logits_take_the_dense_path(monkeypatch):
    import sapiens2_mm.codecs.label_resize as module
    monkeypatch.setattr(module, '_boundary_only',
                        lambda *a: pytest.fail('boundary path on noise'))
    torch.manual_seed(0)
    resize_argmax(torch.randn(29, 32, 24), (301, 217))


@pytest.mark.parametrize('size,align', [((301, 217), False), ((97, 301), True)])
def test_boundary_only_path_forced_on_noise(size, align):
    """Every cell mixed: every pixel takes the interpolate_at path."""
    torch.manual_seed(0)
    logits = torch.randn(29, 32, 24)
    out = resize_argmax(logits, size, align, sparse_max=1.0)
    ref = _reference(logits, size, align)
    top2 = ref.topk(2, dim=0).values
    decided = (top2[0] - top2[1]).numpy() > 1e-5
    np.testing.assert_array_equal(out[decided], ref.argmax(0).numpy()[decided])


def test_exact_and_near_ties_follow_the_reference():
    """Class 5 equal to class 3 (the winner) on the left half and a hair
    above it (3e-6 relative, above float rounding) on the right: exact ties
    keep the first class, as argmax does, near ties go the reference's way."""
    logits = _smooth_logits(8, 40, 30)
    logits[3] = logits.max(0).values + 1.0
    logits[5] = logits[3]  # exact tie: argmax keeps class 3
    logits[5, :, 15:] += 3e-6 * logits[3, :, 15:].abs()  # near tie: class 5
    size = (157, 121)
    out = resize_argmax(logits, size, sparse_max=1.0)
    ref = _reference(logits, size, False).argmax(0).numpy()
    assert set(np.unique(out)) == {3, 5}
    # Only where the blend crosses from the tie to the near tie (source
    # columns 14-15) may float rounding pick either class.
    from sapiens2_mm.codecs.label_resize import _source_index
    seam = (_source_index(size[1], 30, False, 'cpu')[0] == 14).numpy()
    assert seam.any()
    np.testing.assert_array_equal(out[:, ~seam], ref[:, ~seam])


def test_binary_boundary_only_path():
    torch.manual_seed(0)
    logit = _smooth_logits(1, 40, 30)
    size = (211, 157)
    out = resize_argmax(logit, size, threshold=0.3, sparse_max=1.0)
    ref = (_reference(logit, size, False)[0].sigmoid() > 0.3).numpy()
    assert 0.05 < ref.mean() < 0.95
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize('shape,size', [((29, 1, 1), (5, 7)),
                                        ((29, 1, 8), (3, 20)),
                                        ((29, 8, 1), (20, 3)),
                                        ((2, 16, 12), (1, 1))])
@pytest.mark.parametrize('sparse_max', [0.0, 1.0])
def test_degenerate_shapes_both_paths(shape, size, sparse_max):
    torch.manual_seed(0)
    logits = torch.randn(*shape)
    ref = _reference(logits, size, False).argmax(0).numpy()
    np.testing.assert_array_equal(
        resize_argmax(logits, size, sparse_max=sparse_max), ref)


def test_boundary_only_path_with_more_than_256_classes():
    logits = _smooth_logits(300, 64, 48)
    logits[299, :32] += 20  # a label above 255 in the top half
    out = resize_argmax(logits, (150, 110), sparse_max=1.0)
    assert out.dtype == np.uint16 and out.max() == 299
    np.testing.assert_array_equal(
        out, _reference(logits, (150, 110), False).argmax(0).numpy())


@pytest.mark.parametrize('size,align', [((301, 217), False), ((32, 24), False),
                                        ((97, 301), True), ((16, 12), False),
                                        ((7, 5), False)])
def test_nonfinite_pixels_are_those_of_pytorchs_resize(size, align):
    """Every pixel whose cell has a NaN / inf corner (at (7, 5) no cell
    reads one)."""
    logits = torch.randn(5, 32, 24)
    logits[2, 3, 4] = float('nan')
    logits[0, 31, 23] = float('inf')
    logits[4, 10, 0] = float('-inf')
    ref = logits if size == (32, 24) else F.interpolate(
        logits[None], size=size, mode='bilinear', align_corners=align)[0]
    expected = ~torch.isfinite(ref).all(0)
    assert expected.any() == (size != (7, 5))
    assert torch.equal(nonfinite_pixels(logits, size, align), expected)
    assert not nonfinite_pixels(torch.zeros(5, 4, 3), size).any()


def test_identity_size_is_the_argmax():
    logits = torch.randn(29, 32, 24)
    np.testing.assert_array_equal(resize_argmax(logits, (32, 24)),
                                  logits.argmax(0).numpy())
