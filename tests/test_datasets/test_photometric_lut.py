"""The lookup-table colour distortions give the upstream bytes and leave the
global random state where upstream leaves it."""
import glob
import os.path as osp

import cv2
import numpy as np
import pytest

from sapiens2_mm.registry import TRANSFORMS

# The upstream classes (through the registry: importing mmseg's transforms
# needs sapiens2_mm's mmcv-lite stand-in first).
PhotoMetricDistortion = TRANSFORMS.get('mmseg.PhotoMetricDistortion')
PhotometricDistortion = TRANSFORMS.get('mmpose.PhotometricDistortion')

DATA = osp.join(osp.dirname(__file__), '..', 'data')
SEEDS = range(64)


def _images() -> dict:
    """Bundled photos and made-up images with every value in every channel."""
    rows, cols = np.mgrid[0:256, 0:256]
    every = np.stack([rows, cols, (rows * 31 + cols * 17) % 256],
                     axis=-1).astype(np.uint8)  # every (B, G) pair
    rng = np.random.default_rng(0)
    images = {
        'every_value': every,
        'every_value_flipped_view': every[:, ::-1],  # not contiguous
        'random': rng.integers(0, 256, (37, 53, 3), dtype=np.uint8),
        'black': np.zeros((8, 8, 3), np.uint8),
        'white': np.full((8, 8, 3), 255, np.uint8),
        'grey_ramp': np.repeat(np.arange(256, dtype=np.uint8)[None, :, None],
                               3, axis=2),
    }
    for path in (sorted(glob.glob(osp.join(DATA, 'seg_sample', 'images',
                                           '*.jpg')))[:1] +
                 sorted(glob.glob(osp.join(DATA, 'dense_sample', 'rgb',
                                           '*.png')))[:1]):
        images[osp.basename(path)] = cv2.imread(path)
    return images


IMAGES = _images()


def _run(transform, img: np.ndarray, seed: int):
    np.random.seed(seed)
    out = transform(dict(img=img))['img']
    return out, np.random.rand()  # the next draw: same stream afterwards


class _LoggedSeg(PhotoMetricDistortion):
    """Upstream mmseg, logging which steps changed the image."""

    def __init__(self):
        super().__init__()
        self.log = []

    def convert(self, img, alpha=1, beta=0):
        self.log.append('brightness' if beta else
                        'contrast' if img.ndim == 3 else 'saturation')
        return super().convert(img, alpha, beta)

    def hue(self, img):
        out = super().hue(img)
        if out is not img:
            self.log.append('hue')
        return out


@pytest.mark.parametrize('name', sorted(IMAGES))
def test_seg_photometric_lut_equals_mmseg(name):
    img = IMAGES[name]
    fast = TRANSFORMS.build(dict(type='PhotoMetricDistortionLUT'))
    reference = _LoggedSeg()
    patterns = set()
    for seed in SEEDS:
        reference.log.clear()
        want, want_next = _run(reference, img.copy(), seed)
        got, got_next = _run(fast, img.copy(), seed)
        patterns.add(tuple(reference.log))
        assert got.dtype == want.dtype == np.uint8
        assert np.array_equal(got, want), (name, seed, reference.log)
        assert got_next == want_next
    # brightness, contrast early / late, saturation, hue: both orders of
    # contrast with both HSV steps, and none at all, were among the seeds
    assert ('brightness', 'contrast', 'saturation', 'hue') in patterns
    assert ('brightness', 'saturation', 'hue', 'contrast') in patterns
    assert () in patterns and len(patterns) >= 20


class _LoggedPose(PhotometricDistortion):
    """Upstream mmpose, logging the random flags."""

    def __init__(self):
        super().__init__(brightness_delta=32, contrast_range=(0.5, 1.5),
                         saturation_range=(0.5, 1.5), hue_delta=18)
        self.flags = []

    def _random_flags(self):
        flags = super()._random_flags()
        self.flags.append(tuple(int(f) for f in flags[:5]))
        return flags


@pytest.mark.parametrize('name', sorted(IMAGES))
def test_pose_photometric_lut_equals_mmpose(name):
    img = IMAGES[name]
    fast = TRANSFORMS.build(dict(
        type='PosePhotometricDistortionLUT', brightness_delta=32,
        contrast_range=(0.5, 1.5), saturation_range=(0.5, 1.5),
        hue_delta=18))
    reference = _LoggedPose()
    for seed in SEEDS:
        want, want_next = _run(reference, img.copy(), seed)
        got, got_next = _run(fast, img.copy(), seed)
        assert got.dtype == want.dtype == np.uint8
        assert np.array_equal(got, want), (name, seed, reference.flags[-1])
        assert got_next == want_next
    hsv_modes = {f[3] for f in reference.flags}
    contrast_twice = {f for f in reference.flags if f[0] == 1 and f[2]}
    assert hsv_modes == {0, 1, 2, 3} and contrast_twice


def test_hue_shift_wraps_like_upstream():
    """A hue byte near 0 or 179 shifted out of range: mmseg wraps at 180,
    mmpose stores the shifted int in a byte (wraps at 256)."""
    hsv = np.zeros((2, 180, 3), np.uint8)
    hsv[..., 0] = np.arange(180)
    hsv[..., 1:] = 200
    img = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
    for fast, ref in (
            (TRANSFORMS.build(dict(type='PhotoMetricDistortionLUT',
                                   hue_delta=90)),
             PhotoMetricDistortion(hue_delta=90)),
            (TRANSFORMS.build(dict(type='PosePhotometricDistortionLUT',
                                   hue_delta=90)),
             PhotometricDistortion(hue_delta=90))):
        for seed in range(16):
            want, _ = _run(ref, img.copy(), seed)
            got, _ = _run(fast, img.copy(), seed)
            assert np.array_equal(got, want)


@pytest.mark.parametrize('type_', ['PhotoMetricDistortionLUT',
                                   'PosePhotometricDistortionLUT'])
def test_other_images_go_to_upstream(type_):
    """A float image is handled by the upstream code (same result)."""
    fast = TRANSFORMS.build(dict(type=type_))
    ref = (PhotoMetricDistortion() if type_ == 'PhotoMetricDistortionLUT'
           else PhotometricDistortion())
    img = np.random.default_rng(1).uniform(0, 255, (9, 7, 3)).astype(
        np.float32)
    for seed in range(8):
        want, _ = _run(ref, img.copy(), seed)
        got, _ = _run(fast, img.copy(), seed)
        assert np.array_equal(got, want)


def test_uint8_table_keeps_every_shape():
    """cv2.LUT (2-D, 2-4 channels) or np.take (others): table[img]."""
    from sapiens2_mm.datasets.transforms import apply_uint8_table
    rng = np.random.default_rng(2)
    table = rng.integers(0, 256, 256, dtype=np.uint8)
    for shape in [(5, 7), (5, 7, 1), (5, 7, 2), (5, 7, 3), (5, 7, 4),
                  (5, 7, 5), (9,), (2, 3, 4, 3)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        got = apply_uint8_table(img, table)
        assert got.shape == img.shape and got.dtype == np.uint8
        np.testing.assert_array_equal(got, table[img])
    img = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    columns = rng.integers(0, 256, (256, 1, 3), dtype=np.uint8)
    np.testing.assert_array_equal(
        apply_uint8_table(img[::-1], columns),
        np.stack([columns[img[::-1, :, c], 0, c] for c in range(3)], -1))
