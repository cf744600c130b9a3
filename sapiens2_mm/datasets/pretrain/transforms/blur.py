"""Gaussian blur with a random sigma (cv2)."""
import random

import cv2
from mmcv.transforms import BaseTransform

from ....registry import TRANSFORMS


@TRANSFORMS.register_module()
class RandomGaussianBlur(BaseTransform):
    """Blur ``img`` with probability ``prob`` and sigma ~ U(sigma_range).

    mmpretrain's ``GaussianBlur`` blurs through Pillow, which the pinned stack
    does not install; this one uses ``cv2.GaussianBlur`` with the kernel size
    derived from sigma by OpenCV (DINO's blur: sigma in [0.1, 2]).

    Args:
        prob: probability of blurring.
        sigma_range: (min, max) standard deviation in pixels.
    """

    def __init__(self, prob: float = 0.5, sigma_range=(0.1, 2.0)):
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f'prob must be in [0, 1], got {prob}')
        self.prob = prob
        self.sigma_range = tuple(sigma_range)

    def transform(self, results: dict) -> dict:
        if random.random() < self.prob:
            sigma = random.uniform(*self.sigma_range)
            results['img'] = cv2.GaussianBlur(results['img'], (0, 0), sigma)
        return results
