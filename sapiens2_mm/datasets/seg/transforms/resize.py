"""Seg resizes with the official interpolation rule.

Images: ``cv2.INTER_AREA`` when the new width is smaller than the image width,
else ``cv2.INTER_CUBIC`` (see :mod:`sapiens2_mm.datasets.transforms.
interpolation`); labels: nearest.
"""
from typing import Sequence

import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS

# resize_image / resize_label are imported from here by the inferencers.
from ...transforms.interpolation import resize_image, resize_label

__all__ = ['SegResize', 'SegRandomResize', 'SegLabelToOutputSize',
           'resize_image', 'resize_label']


def resize_sample(results: dict, height: int, width: int,
                  labels: bool) -> dict:
    """Resize ``img`` (official rule) and, if ``labels``, ``gt_seg_map``
    (nearest) to (height, width); set the size keys."""
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

    The image uses ``cv2.INTER_AREA`` when ``width`` is smaller than its width,
    else ``cv2.INTER_CUBIC`` (official rule; the heights are not compared).

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
        return resize_sample(results, self.height, self.width,
                             not self.test_mode)


@TRANSFORMS.register_module()
class SegRandomResize(BaseTransform):
    """Random rescale keeping the aspect ratio (official ``SegRandomResize``).

    A ratio ``r`` is drawn uniformly from ``ratio_range`` and the image is
    scaled to fit inside (height * r, width * r). Interpolation as
    :class:`SegResize` (INTER_AREA when the width shrinks, else INTER_CUBIC).

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

    def draw_size(self, h: int, w: int):
        """Draw the ratio (one ``np.random`` call) and return the new
        (height, width) of an (h, w) image."""
        ratio = np.random.uniform(*self.ratio_range)
        box_h, box_w = self.height * ratio, self.width * ratio
        if self.keep_ratio:
            scale = min(box_h / h, box_w / w)
            new_h, new_w = int(h * scale + 0.5), int(w * scale + 0.5)
        else:
            new_h, new_w = int(box_h + 0.5), int(box_w + 0.5)
        return max(new_h, 1), max(new_w, 1)

    def transform(self, results: dict) -> dict:
        new_h, new_w = self.draw_size(*results['img'].shape[:2])
        return resize_sample(results, new_h, new_w, True)


@TRANSFORMS.register_module()
class SegLabelToOutputSize(BaseTransform):
    """Resize the training label (nearest) to the head's output size.

    The 4K seg head predicts logits at half the input (2048x1536 for
    4096x3072). mmseg's loss would otherwise upsample the (B, 29, 2048,
    1536) logits to a 4096x3072 label (1.5 GB of float32 per image, plus
    its gradient); here the label comes down instead, once, on the CPU.
    Placed after the last transform that moves the image (``SegResize``).

    Args:
        scale: output size / input size (0.5); the image size times
            ``scale`` must be whole pixels.

    Modified keys: ``gt_seg_map``.

    Raises:
        ValueError: an image size that ``scale`` does not divide.
    """

    def __init__(self, scale: float = 0.5) -> None:
        if not 0 < scale <= 1:
            raise ValueError(f'SegLabelToOutputSize scale must be in (0, 1], '
                             f'got {scale}.')
        self.scale = float(scale)

    def transform(self, results: dict) -> dict:
        h, w = results['img'].shape[:2]
        out_h, out_w = h * self.scale, w * self.scale
        if out_h != int(out_h) or out_w != int(out_w):
            raise ValueError(
                f'SegLabelToOutputSize(scale={self.scale}) needs an image '
                f'whose size times the scale is whole pixels, got {h}x{w} '
                f'({results.get("img_path")}); resize to the config size '
                'first (SegResize).')
        if results.get('gt_seg_map') is not None:
            results['gt_seg_map'] = resize_label(results['gt_seg_map'],
                                                 int(out_h), int(out_w))
        return results
