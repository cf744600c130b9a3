"""Resizes with the official interpolation: INTER_AREA down, INTER_CUBIC up."""
from typing import Sequence

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS


def resize_image(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Area interpolation when shrinking, bicubic when enlarging.

    mmcv's ``imresize`` takes one interpolation for both; the official
    pipeline picks by direction (an image shrunk in one axis and enlarged in
    the other uses area, as the area is what shrinks).
    """
    h, w = img.shape[:2]
    shrink = height * width < h * w
    interp = cv2.INTER_AREA if shrink else cv2.INTER_CUBIC
    out = cv2.resize(img, (width, height), interpolation=interp)
    if img.ndim == 3 and out.ndim == 2:
        out = out[..., None]
    return out


def resize_label(seg: np.ndarray, height: int, width: int) -> np.ndarray:
    """Nearest-neighbour resize of a label map."""
    return cv2.resize(seg, (width, height), interpolation=cv2.INTER_NEAREST)


def _apply(results: dict, height: int, width: int, labels: bool) -> dict:
    h, w = results['img'].shape[:2]
    results['img'] = resize_image(results['img'], height, width)
    if labels and results.get('gt_seg_map') is not None:
        results['gt_seg_map'] = resize_label(results['gt_seg_map'], height,
                                             width)
    results['img_shape'] = (height, width)
    results['scale_factor'] = (width / w, height / h)
    results['keep_ratio'] = False
    return results


@TRANSFORMS.register_module()
class SegResize(BaseTransform):
    """Resize to a fixed (height, width); labels nearest, image area/cubic.

    Args:
        height: output height (1024).
        width: output width (768).
        test_mode: resize the image only; the label keeps its original size,
            so evaluation runs at the original resolution (official).

    Modified keys: ``img``, ``img_shape``, ``scale_factor`` and, unless
    ``test_mode``, ``gt_seg_map``.
    """

    def __init__(self, height: int = 1024, width: int = 768,
                 test_mode: bool = False) -> None:
        self.height, self.width, self.test_mode = height, width, test_mode

    def transform(self, results: dict) -> dict:
        return _apply(results, self.height, self.width, not self.test_mode)


@TRANSFORMS.register_module()
class SegRandomResize(BaseTransform):
    """Random rescale keeping the aspect ratio (official ``SegRandomResize``).

    A ratio ``r`` is drawn uniformly from ``ratio_range`` and the image is
    scaled to fit inside (height * r, width * r).

    Args:
        height: base height (1024).
        width: base width (768).
        ratio_range: (min, max) of ``r``.
        keep_ratio: fit inside the box (True) or stretch to it (False).
    """

    def __init__(self, height: int = 1024, width: int = 768,
                 ratio_range: Sequence[float] = (0.4, 2.0),
                 keep_ratio: bool = True) -> None:
        if ratio_range[0] <= 0 or ratio_range[0] > ratio_range[1]:
            raise ValueError(
                f'ratio_range must be 0 < min <= max, got {ratio_range}.')
        self.height, self.width = height, width
        self.ratio_range = tuple(ratio_range)
        self.keep_ratio = keep_ratio

    def transform(self, results: dict) -> dict:
        ratio = np.random.uniform(*self.ratio_range)
        box_h, box_w = self.height * ratio, self.width * ratio
        h, w = results['img'].shape[:2]
        if self.keep_ratio:
            scale = min(box_h / h, box_w / w)
            new_h, new_w = int(h * scale + 0.5), int(w * scale + 0.5)
        else:
            new_h, new_w = int(box_h + 0.5), int(box_w + 0.5)
        return _apply(results, max(new_h, 1), max(new_w, 1), True)
