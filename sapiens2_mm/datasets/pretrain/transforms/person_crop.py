"""Person-centric random resized crop for human-centric pretraining."""
import math
import random
from typing import Sequence, Tuple

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from ....registry import TRANSFORMS


@TRANSFORMS.register_module()
class PersonCentricResizedCrop(BaseTransform):
    """Crop around a random person box (if any) at the output aspect ratio.

    With ``person_bboxes`` (N, 4) x1, y1, x2, y2 in ``results`` (from
    ``ImageFolderDataset(person_boxes=...)``), one box is drawn, grown to the
    output aspect ratio H:W, scaled by ``U(context_range)`` (>1 adds context),
    jittered by ``U(-jitter, jitter)`` of its size, clipped to the image and
    resized to ``scale``. Without boxes it falls back to a random resized crop
    of area fraction ``U(crop_ratio_range)`` at the output aspect ratio, so
    people keep their proportions (no anisotropic stretch, unlike a crop with
    a random aspect ratio).

    Args:
        scale: output (H, W).
        context_range: box growth factor range.
        jitter: centre shift as a fraction of the crop size.
        crop_ratio_range: area fraction range of the fallback crop.
        interpolation: cv2 interpolation name.
    """

    INTERPOLATIONS = dict(nearest=cv2.INTER_NEAREST, bilinear=cv2.INTER_LINEAR,
                          bicubic=cv2.INTER_CUBIC, area=cv2.INTER_AREA)

    def __init__(self, scale: Sequence[int],
                 context_range: Tuple[float, float] = (1.1, 1.6),
                 jitter: float = 0.1,
                 crop_ratio_range: Tuple[float, float] = (0.3, 1.0),
                 interpolation: str = 'bilinear'):
        self.scale = (int(scale[0]), int(scale[1]))
        self.context_range = tuple(context_range)
        self.jitter = jitter
        self.crop_ratio_range = tuple(crop_ratio_range)
        if interpolation not in self.INTERPOLATIONS:
            raise ValueError(
                f'interpolation must be one of {sorted(self.INTERPOLATIONS)}, '
                f'got {interpolation!r}')
        self.interpolation = self.INTERPOLATIONS[interpolation]

    def crop_box(self, img_hw: Tuple[int, int],
                 boxes: np.ndarray) -> Tuple[int, int, int, int]:
        """(x1, y1, x2, y2) integer crop in the image."""
        height, width = img_hw
        aspect = self.scale[0] / self.scale[1]  # H / W of the output
        if len(boxes):
            x1, y1, x2, y2 = boxes[random.randrange(len(boxes))]
            box_h, box_w = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
            crop_h = max(box_h, box_w * aspect) * random.uniform(
                *self.context_range)
            cx = (x1 + x2) / 2 + random.uniform(-1, 1) * self.jitter * crop_h
            cy = (y1 + y2) / 2 + random.uniform(-1, 1) * self.jitter * crop_h
        else:
            area = height * width * random.uniform(*self.crop_ratio_range)
            crop_h = math.sqrt(area * aspect)
            cx = cy = None
        crop_h = min(crop_h, height, width * aspect)
        crop_w = crop_h / aspect
        if cx is None:
            cx = random.uniform(crop_w / 2, width - crop_w / 2)
            cy = random.uniform(crop_h / 2, height - crop_h / 2)
        left = int(round(min(max(cx - crop_w / 2, 0), width - crop_w)))
        top = int(round(min(max(cy - crop_h / 2, 0), height - crop_h)))
        return (left, top, left + max(int(round(crop_w)), 1),
                top + max(int(round(crop_h)), 1))

    def transform(self, results: dict) -> dict:
        img = results['img']
        boxes = np.asarray(results.get('person_bboxes', []),
                           dtype=np.float64).reshape(-1, 4)
        x1, y1, x2, y2 = self.crop_box(img.shape[:2], boxes)
        crop = img[y1:y2, x1:x2]
        results['img'] = cv2.resize(crop, self.scale[::-1],
                                    interpolation=self.interpolation)
        results['img_shape'] = self.scale
        results['crop_bbox'] = np.array([x1, y1, x2, y2])
        return results
