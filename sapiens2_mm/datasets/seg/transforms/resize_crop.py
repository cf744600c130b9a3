"""The random rescale and random crop of seg training as one step, with the
order of the work as an option (crop before enlarging)."""
from typing import Sequence

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS

from ...transforms.interpolation import resize_interpolation, resize_label
from .crop import SegRandomCrop
from .resize import SegRandomResize, resize_sample


@TRANSFORMS.register_module()
class SegRandomResizeCrop(BaseTransform):
    """:class:`SegRandomResize` followed by :class:`SegRandomCrop`.

    With ``crop_first=False`` it is the two official steps: the same random
    draws, the same arrays. At 4096x3072 the rescale enlarges the whole
    photo up to 2x the network size (8192x6144) before the crop keeps
    4096x3072 of it. ``crop_first=True`` makes, when the crop is taken
    (``prob``) and the rescale enlarges (``cv2.INTER_CUBIC`` by the
    official rule), only what the crop keeps:

    * the label, the crop window and its ``cat_max_ratio`` redraws are the
      official ones (the label is resized whole: a uint8 nearest resize);
    * the image: ``cv2.resize`` with the official scale factors (``fx``,
      ``fy``) of the part of the photo above and left of the crop's far
      corner (plus 3 source pixels of the cubic kernel's reach), then the
      crop. Every output pixel is computed from the same source pixels with
      the same coefficients; with OpenCV's IPP backend (on by default) a few
      pixels differ by 1 grey level, because IPP splits a resize into tiles
      by the image size (measured on the bundled sample at 4K: at most 1, on
      fewer than 1e-5 of the pixels; with ``cv2.ipp.setUseIPP(False)`` every
      pixel is equal). The rows above and columns left of the crop are still
      computed: a window that starts later cannot keep the official
      sub-pixel offset.

    Without the crop, or when the rescale shrinks (``cv2.INTER_AREA``), the
    official path runs. Only cropped samples get cheaper (``prob`` is 0.3 in
    the official pipeline): the later steps see a crop-sized image either
    way.

    Args:
        height: base height of the rescale box and crop height.
        width: base width of the rescale box and crop width.
        ratio_range: (min, max) of the rescale ratio (SegRandomResize).
        keep_ratio: fit inside the box (SegRandomResize).
        prob: probability of cropping (SegRandomCrop).
        cat_max_ratio: SegRandomCrop's cap on the largest class.
        ignore_index: label of the padding (SegRandomCrop).
        crop_first: see above.

    Modified keys: ``img``, ``img_shape``, ``scale_factor``,
    ``keep_ratio``, ``gt_seg_map``.
    """

    def __init__(self, height: int = 1024, width: int = 768,
                 ratio_range: Sequence[float] = (0.4, 2.0),
                 keep_ratio: bool = True, prob: float = 0.3,
                 cat_max_ratio: float = 0.75, ignore_index: int = 255,
                 crop_first: bool = False) -> None:
        self.resize = SegRandomResize(height, width, ratio_range, keep_ratio)
        self.crop = SegRandomCrop(height, width, prob, cat_max_ratio,
                                  ignore_index)
        self.crop_first = crop_first

    def transform(self, results: dict) -> dict:
        h, w = results['img'].shape[:2]
        new_h, new_w = self.resize.draw_size(h, w)
        take_crop = np.random.rand() < self.crop.prob
        if self.crop_first and take_crop and resize_interpolation(
                w, new_w) == cv2.INTER_CUBIC:
            return self._crop_first(results, new_h, new_w)
        results = resize_sample(results, new_h, new_w, True)
        if not take_crop:
            return results
        # SegRandomCrop's steps after its own probability draw
        self.crop.pad_to_crop(results)
        seg = results.get('gt_seg_map')
        top, left = self.crop.choose_window(
            *results['img'].shape[:2], None if seg is None else
            lambda y, x: seg[y:y + self.crop.height, x:x + self.crop.width])
        window = (slice(top, top + self.crop.height),
                  slice(left, left + self.crop.width))
        results['img'] = results['img'][window]
        if seg is not None:
            results['gt_seg_map'] = seg[window]
        results['img_shape'] = results['img'].shape[:2]
        return results

    def _crop_first(self, results: dict, new_h: int, new_w: int) -> dict:
        img, seg = results['img'], results.get('gt_seg_map')
        h, w = img.shape[:2]
        crop_h, crop_w = self.crop.height, self.crop.width
        if seg is not None:  # as the official steps: resized whole, padded
            seg = resize_label(seg, new_h, new_w)
            pad = ((0, max(crop_h - new_h, 0)), (0, max(crop_w - new_w, 0)))
            seg = np.pad(seg, pad, constant_values=self.crop.ignore_index)
        top, left = self.crop.choose_window(
            max(new_h, crop_h), max(new_w, crop_w),
            None if seg is None else
            lambda y, x: seg[y:y + crop_h, x:x + crop_w])
        bottom, right = min(top + crop_h, new_h), min(left + crop_w, new_w)
        fx, fy = new_w / w, new_h / h  # cv2.resize's factors for the photo
        # source pixels the cubic kernel reads for output rows < bottom
        # (output y reads rows floor((y + 0.5) / fy - 0.5) - 1 ... + 2)
        end_y = min(h, int(np.ceil((bottom - 0.5) / fy - 0.5)) + 3)
        end_x = min(w, int(np.ceil((right - 0.5) / fx - 0.5)) + 3)
        part = cv2.resize(img[:end_y, :end_x], None, fx=fx, fy=fy,
                          interpolation=cv2.INTER_CUBIC)
        if part.ndim < img.ndim:
            part = part[..., None]
        out = np.zeros((crop_h, crop_w) + img.shape[2:], img.dtype)
        out[:bottom - top, :right - left] = part[top:bottom, left:right]
        results['img'] = out
        if seg is not None:
            results['gt_seg_map'] = seg[top:top + crop_h, left:left + crop_w]
        results['img_shape'] = (crop_h, crop_w)
        results['scale_factor'] = (fx, fy)
        results['keep_ratio'] = False
        return results
