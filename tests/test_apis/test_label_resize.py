"""Banded resize + argmax against PyTorch's full-image bilinear resize."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sapiens2_mm.apis.label_resize import label_dtype, resize_argmax


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
