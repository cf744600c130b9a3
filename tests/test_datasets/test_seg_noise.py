"""The official Gaussian noise drawn in blocks of rows gives the whole-image
draw's bytes and leaves the global generator where it leaves it."""
import numpy as np
import pytest

from sapiens2_mm.datasets.seg.transforms import noise as noise_module
from sapiens2_mm.registry import TRANSFORMS
from tests.test_tools.workflow_utils import load_tool

LOADER_4K = load_tool('benchmarks/loader_4k')


def _both(img: np.ndarray, seed: int, **cfg):
    """(blocks, previous) results and the generator's next value after
    each."""
    out = []
    for previous in (False, True):
        step = TRANSFORMS.build(dict(type='SegRandomGaussianNoise', **cfg))
        if previous:
            step.transform = LOADER_4K.previous_gaussian_noise.__get__(step)
        np.random.seed(seed)
        np.random.normal()  # leaves the second polar value cached
        result = step(dict(img=img))['img']
        out.append((result, np.random.normal(size=3)))
    return out


def _images():
    rng = np.random.default_rng(0)
    every = np.arange(256 * 7 * 3).reshape(256, 7, 3) % 256
    return {
        'random': rng.integers(0, 256, (61, 37, 3), dtype=np.uint8),
        'black_white': np.repeat(np.array([0, 255], np.uint8), 999).reshape(
            37, 18, 3),  # clipping at both ends
        'every_value': every.astype(np.uint8),
        'view': rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)[::2, ::-1],
        'grey_2d': rng.integers(0, 256, (33, 29), dtype=np.uint8),
        'float32': rng.uniform(0, 255, (20, 13, 3)).astype(np.float32),
        'empty': np.zeros((0, 5, 3), np.uint8),
    }


@pytest.mark.parametrize('block', [1, 7, 100, 1 << 18])
@pytest.mark.parametrize('name', sorted(_images()))
def test_blocks_equal_the_whole_image_draw(name, block, monkeypatch):
    """Blocks of one value, odd sizes (the polar method's cached second value
    crosses a block), a part of a row, whole rows, the whole image."""
    monkeypatch.setattr(noise_module, '_BLOCK_VALUES', block)
    img = _images()[name]
    for seed in range(3):
        (got, got_next), (want, want_next) = _both(
            img, seed, prob=1.0, var_range=(5.0, 400.0))
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
        np.testing.assert_array_equal(got_next, want_next)


def test_bundled_photo_at_4k_size_equals_the_whole_image_draw():
    """A 4096x3072 image (the 4K pipelines' size): 147 blocks."""
    import glob
    import os.path as osp

    import cv2

    from tests.conftest import DATA_DIR
    path = sorted(glob.glob(osp.join(DATA_DIR, 'seg_sample', 'images',
                                     '*.jpg')))[0]
    img = cv2.resize(cv2.imread(path), (3072, 4096))
    (got, got_next), (want, want_next) = _both(img, 5, prob=1.0)
    assert np.array_equal(got, want)
    np.testing.assert_array_equal(got_next, want_next)
    assert np.count_nonzero(got != img) > img.size // 2


def test_no_noise_draws_nothing_more():
    img = np.full((4, 4, 3), 9, np.uint8)
    (got, got_next), (want, want_next) = _both(img, 0, prob=0.0)
    assert np.array_equal(got, img) and np.array_equal(got, want)
    np.testing.assert_array_equal(got_next, want_next)
