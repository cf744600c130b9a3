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


@TRANSFORMS.register_module()
class SegRandomGaussianNoise(BaseTransform):
    """Add N(0, var) noise per pixel and channel, var from ``var_range``.

    Args:
        prob: probability of adding noise (0.3).
        var_range: (min, max) variance in 0-255 units (5, 20).
    """

    def __init__(self, prob: float = 0.3,
                 var_range: Sequence[float] = (5.0, 20.0)) -> None:
        self.prob, self.var_range = prob, tuple(var_range)

    def transform(self, results: dict) -> dict:
        if np.random.rand() < self.prob:
            img = results['img']
            std = np.sqrt(np.random.uniform(*self.var_range))
            noisy = img.astype(np.float32) + np.random.normal(
                0.0, std, img.shape).astype(np.float32)
            results['img'] = np.clip(noisy, 0, 255).astype(img.dtype)
        return results
