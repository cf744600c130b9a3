"""Gaussian blur and additive Gaussian noise on the image only."""
from typing import Sequence

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS


@TRANSFORMS.register_module()
class SegRandomGaussianBlur(BaseTransform):
    """Blur with a ``kernel_size`` box and sigma drawn from ``sigma_range``.

    Args:
        prob: probability of blurring (0.3).
        kernel_size: odd kernel size (3).
        sigma_range: (min, max) sigma (0.1, 2.0).
    """

    def __init__(self, prob: float = 0.3, kernel_size: int = 3,
                 sigma_range: Sequence[float] = (0.1, 2.0)) -> None:
        if kernel_size % 2 != 1:
            raise ValueError(f'kernel_size must be odd, got {kernel_size}.')
        self.prob, self.kernel_size = prob, kernel_size
        self.sigma_range = tuple(sigma_range)

    def transform(self, results: dict) -> dict:
        if np.random.rand() < self.prob:
            sigma = np.random.uniform(*self.sigma_range)
            k = self.kernel_size
            results['img'] = cv2.GaussianBlur(results['img'], (k, k), sigma)
        return results


NOISE_GENERATORS = ('official', 'pcg64')


@TRANSFORMS.register_module()
class SegRandomGaussianNoise(BaseTransform):
    """Add N(0, var) noise per pixel and channel, var from ``var_range``.

    ``generator='official'`` draws the noise as the official code does,
    ``np.random.normal`` of the global legacy generator (float64, then cast
    to float32), in blocks of rows (:func:`add_official_noise`: same values,
    less memory). At 4096x3072 that is 38 M values, about 1.5 s per noised
    image on one core of this project's shared machine, the largest part of
    a 4K loader worker's time (docs/4k.md).
    ``'pcg64'`` (named option) draws float32 standard normals from a numpy
    ``Generator`` seeded from the global generator (one ``randint`` draw),
    several times faster: the same distribution, other numbers, so a run
    with it does not repeat an official-noise run's augmentations.

    Args:
        prob: probability of adding noise (0.3).
        var_range: (min, max) variance in 0-255 units (5, 20).
        generator: ``'official'`` or ``'pcg64'`` (see above).
    """

    def __init__(self, prob: float = 0.3,
                 var_range: Sequence[float] = (5.0, 20.0),
                 generator: str = 'official') -> None:
        if generator not in NOISE_GENERATORS:
            raise ValueError(f'generator={generator!r}; expected one of '
                             f'{NOISE_GENERATORS}.')
        self.prob, self.var_range = prob, tuple(var_range)
        self.generator = generator

    def transform(self, results: dict) -> dict:
        if np.random.rand() < self.prob:
            img = results['img']
            std = np.sqrt(np.random.uniform(*self.var_range))
            if self.generator == 'official':
                results['img'] = add_official_noise(img, std)
                return results
            rng = np.random.default_rng(np.random.randint(2**31))
            noise = rng.standard_normal(img.shape, dtype=np.float32)
            noise *= np.float32(std)
            noise += img  # img.astype(float32) + noise, in place
            results['img'] = np.clip(noise, 0, 255, out=noise).astype(
                img.dtype)
        return results


# Values of one official noise draw block: 2 MB of float64, which stays in
# a core's cache through the cast, add and clip.
_BLOCK_VALUES = 1 << 18


def add_official_noise(img: np.ndarray, std: float) -> np.ndarray:
    """``clip(img + float32(np.random.normal(0, std, img.shape)), 0, 255)``
    in ``img``'s dtype, drawn and added in blocks of rows.

    The legacy generator gives a C-order draw of ``img.shape`` as the same
    values, in the same order, when it is drawn in consecutive blocks of rows
    (its state, including the cached second value of the polar method,
    carries over between calls), so the result and the generator's state
    afterwards are those of one draw of the whole shape (tested). Blocks
    avoid the 300 MB float64 and 150 MB float32 arrays of a 4096x3072 image:
    1.5x faster on this project's shared 2-core machine. Drawing the same
    numbers faster is not possible with numpy: the legacy normal is
    sequential and its log is the C library's, which numpy's vectorized
    ``np.log`` does not reproduce bit for bit (docs/4k.md).

    Args:
        img: (H, ...) image, usually (H, W, 3) uint8.
        std: standard deviation of the noise.

    Returns:
        np.ndarray: new array of ``img``'s shape and dtype.
    """
    out = np.empty(img.shape, img.dtype)
    row_values = int(np.prod(img.shape[1:], dtype=np.int64))
    rows = max(1, _BLOCK_VALUES // max(1, row_values))
    for start in range(0, img.shape[0], rows):
        part = img[start:start + rows]
        noise = np.random.normal(0.0, std, part.shape).astype(np.float32)
        noise += part
        # the cast into out is astype(img.dtype)'s
        out[start:start + rows] = np.clip(noise, 0, 255, out=noise)
    return out
