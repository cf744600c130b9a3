"""Random crop with padding and a cap on the largest class share."""
from typing import Callable, Optional

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS


@TRANSFORMS.register_module()
class SegRandomCrop(BaseTransform):
    """Official ``SegRandomCrop``: applied with ``prob``; pads if too small.

    mmseg's ``RandomCrop`` has the same ``cat_max_ratio`` retry rule but is
    always applied and never pads (a smaller image stays smaller), so the crop
    size would not be guaranteed; hence this transform.

    Args:
        height: crop height (1024).
        width: crop width (768).
        prob: probability of cropping.
        cat_max_ratio: the largest class (ignore excluded) must cover less
            than this share of the crop; up to 10 draws, then the last one.
        ignore_index: label used to pad the label map; the image pads with 0.
    """

    def __init__(self, height: int = 1024, width: int = 768, prob: float = 0.3,
                 cat_max_ratio: float = 0.75, ignore_index: int = 255) -> None:
        self.height, self.width = height, width
        self.prob = prob
        self.cat_max_ratio = cat_max_ratio
        self.ignore_index = ignore_index

    def pad_to_crop(self, results: dict) -> None:
        """Pad image (0) and label (``ignore_index``) at the bottom / right
        to at least the crop size."""
        h, w = results['img'].shape[:2]
        pad_h, pad_w = max(self.height - h, 0), max(self.width - w, 0)
        if not pad_h and not pad_w:
            return
        widths = ((0, pad_h), (0, pad_w)) + ((0, 0), ) * (results['img'].ndim - 2)
        results['img'] = np.pad(results['img'], widths, constant_values=0)
        if results.get('gt_seg_map') is not None:
            results['gt_seg_map'] = np.pad(results['gt_seg_map'],
                                           ((0, pad_h), (0, pad_w)),
                                           constant_values=self.ignore_index)

    def _draw(self, h: int, w: int):
        top = np.random.randint(0, h - self.height + 1)
        left = np.random.randint(0, w - self.width + 1)
        return top, left

    def choose_window(self, h: int, w: int,
                      label_window: Optional[Callable] = None):
        """Draw the crop's (top, left) in an (h, w) image already padded to
        at least the crop size, redrawn (up to 10 times) while the largest
        class covers ``cat_max_ratio`` or more of ``label_window(top,
        left)``, the label inside the window (None: no label)."""
        top, left = self._draw(h, w)
        if label_window is not None and self.cat_max_ratio < 1.0:
            for _ in range(10):
                counts = self._class_counts(label_window(top, left))
                if (len(counts) > 1 and
                        counts.max() / counts.sum() < self.cat_max_ratio):
                    break
                top, left = self._draw(h, w)
        return top, left

    def _class_counts(self, crop: np.ndarray) -> np.ndarray:
        """Pixels per class present in ``crop``, ``ignore_index`` left out
        (the counts ``np.unique(..., return_counts=True)`` gives). np.unique
        sorts a 4096x3072 crop in about 0.5 s, up to 10 times per sample; a
        uint8 label is counted by cv2.calcHist in about 15 ms instead (its
        float32 counts are exact below 2**24 pixels)."""
        if crop.dtype != np.uint8 or crop.size >= 2**24:
            return np.unique(crop[crop != self.ignore_index],
                             return_counts=True)[1]
        counts = cv2.calcHist([crop], [0], None, [256], [0, 256])[:, 0]
        counts = counts.astype(np.int64)
        if 0 <= self.ignore_index < 256:
            counts[self.ignore_index] = 0
        return counts[counts > 0]

    def transform(self, results: dict) -> dict:
        if np.random.rand() >= self.prob:
            return results
        self.pad_to_crop(results)
        h, w = results['img'].shape[:2]
        seg = results.get('gt_seg_map')
        top, left = self.choose_window(
            h, w, None if seg is None else
            lambda y, x: seg[y:y + self.height, x:x + self.width])
        window = (slice(top, top + self.height), slice(left, left + self.width))
        results['img'] = results['img'][window]
        if seg is not None:
            results['gt_seg_map'] = seg[window]
        results['img_shape'] = results['img'].shape[:2]
        return results
