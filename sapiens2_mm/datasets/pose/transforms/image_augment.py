"""Blur / median blur / coarse dropout (the official albumentations step).

The official pipeline applies albumentations ``Blur(p=0.1)``,
``MedianBlur(p=0.1)`` and ``CoarseDropout`` (1 hole, 0.2-0.4 of the image side,
p=1). albumentations is not a dependency here, so the three ops are written out
with cv2/numpy (a few lines each, same parameters).
"""
from typing import Sequence

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from ....registry import TRANSFORMS


def _odd_kernel(rng: np.random.Generator, limits: Sequence[int]) -> int:
    choices = [k for k in range(limits[0], limits[1] + 1) if k % 2 == 1]
    return int(rng.choice(choices))


@TRANSFORMS.register_module()
class RandomBlur(BaseTransform):
    """Box blur (``median=False``) or median blur with an odd random kernel.

    Args:
        prob: probability to apply.
        blur_limit: (min, max) kernel size; odd sizes in between are drawn.
        median: median filter instead of the box filter.
    """

    def __init__(self, prob: float = 0.1, blur_limit=(3, 7),
                 median: bool = False) -> None:
        self.prob = prob
        self.blur_limit = tuple(blur_limit)
        self.median = median

    def transform(self, results: dict) -> dict:
        rng = np.random.default_rng(np.random.randint(2**31))
        if rng.random() >= self.prob:
            return results
        k = _odd_kernel(rng, self.blur_limit)
        img = results['img']
        results['img'] = (cv2.medianBlur(img, k) if self.median else
                          cv2.blur(img, (k, k)))
        return results


@TRANSFORMS.register_module()
class RandomCoarseDropout(BaseTransform):
    """Fill ``num_holes`` random rectangles with ``fill`` (cut-out).

    Hole height/width are drawn in ``hole_ratio`` times the image height/width.

    Args:
        prob: probability to apply (official: 1.0).
        num_holes: number of rectangles (official: 1).
        hole_ratio: (min, max) side fraction (official: 0.2-0.4).
        fill: pixel value.
    """

    def __init__(self, prob: float = 1.0, num_holes: int = 1,
                 hole_ratio=(0.2, 0.4), fill: int = 0) -> None:
        lo, hi = hole_ratio
        if not 0 < lo <= hi <= 1:
            raise ValueError(
                f'hole_ratio must satisfy 0 < min <= max <= 1, got {hole_ratio}.')
        self.prob = prob
        self.num_holes = num_holes
        self.hole_ratio = (lo, hi)
        self.fill = fill

    def transform(self, results: dict) -> dict:
        rng = np.random.default_rng(np.random.randint(2**31))
        if rng.random() >= self.prob:
            return results
        img = results['img'].copy()
        h, w = img.shape[:2]
        for _ in range(self.num_holes):
            hh = max(1, int(h * rng.uniform(*self.hole_ratio)))
            ww = max(1, int(w * rng.uniform(*self.hole_ratio)))
            y = int(rng.integers(0, h - hh + 1))
            x = int(rng.integers(0, w - ww + 1))
            img[y:y + hh, x:x + ww] = self.fill
        results['img'] = img
        return results
