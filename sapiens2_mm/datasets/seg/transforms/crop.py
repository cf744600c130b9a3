"""Random crop with padding and a cap on the largest class share."""
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

    def _pad(self, results: dict) -> None:
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

    def transform(self, results: dict) -> dict:
        if np.random.rand() >= self.prob:
            return results
        self._pad(results)
        h, w = results['img'].shape[:2]
        seg = results.get('gt_seg_map')
        top, left = self._draw(h, w)
        if seg is not None and self.cat_max_ratio < 1.0:
            for _ in range(10):
                crop = seg[top:top + self.height, left:left + self.width]
                _, counts = np.unique(crop[crop != self.ignore_index],
                                      return_counts=True)
                if (len(counts) > 1 and
                        counts.max() / counts.sum() < self.cat_max_ratio):
                    break
                top, left = self._draw(h, w)
        window = (slice(top, top + self.height), slice(left, left + self.width))
        results['img'] = results['img'][window]
        if seg is not None:
            results['gt_seg_map'] = seg[window]
        results['img_shape'] = results['img'].shape[:2]
        return results
