"""Resample training samples whose foreground is too small."""
from typing import Optional

import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS


@TRANSFORMS.register_module()
class SegFilterSmallForeground(BaseTransform):
    """Return None (mmengine datasets then draw another sample) when the
    foreground (label > 0 and != ignore) is below ``min_ratio`` of the pixels,
    as the official ``SegPackInputs`` does in training.

    Args:
        min_ratio: minimum foreground share (0.01).
        ignore_index: ignore label (255).
    """

    def __init__(self, min_ratio: float = 0.01, ignore_index: int = 255) -> None:
        self.min_ratio, self.ignore_index = min_ratio, ignore_index

    def transform(self, results: dict) -> Optional[dict]:
        seg = results['gt_seg_map']
        foreground = np.count_nonzero((seg > 0) & (seg != self.ignore_index))
        if foreground < self.min_ratio * seg.size:
            return None
        return results
