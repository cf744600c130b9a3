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
    to float32). At 4096x3072 that is 38 M values, about 2 s per noised
    image on one core, most of a 4K loader worker's time (docs/4k.md).
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
                noise = np.random.normal(0.0, std, img.shape).astype(
                    np.float32)
            else:
                rng = np.random.default_rng(np.random.randint(2**31))
                noise = rng.standard_normal(img.shape, dtype=np.float32)
                noise *= np.float32(std)
            noise += img  # img.astype(float32) + noise, in place
            results['img'] = np.clip(noise, 0, 255, out=noise).astype(
                img.dtype)
        return results
