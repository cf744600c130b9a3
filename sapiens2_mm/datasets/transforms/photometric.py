"""The official colour distortions of uint8 images through lookup tables.

The seg and dense pipelines use mmseg's ``PhotoMetricDistortion``, the pose
pipeline mmpose's ``PhotometricDistortion``. Both change brightness and
contrast, and the saturation and hue of the image's HSV form, one pixel
value at a time: ``uint8(clip(float32(v) * alpha + beta, 0, 255))`` and an
integer shift of the hue byte. On a 4096x3072 image each such step costs a
float32 copy of 150 MB and four passes over it (about 0.2 s on one core).

A function of one uint8 value has 256 results. The classes here compute them
with the upstream method itself (its ``convert`` on the 256 values) and
apply the table with ``cv2.LUT``, draw the random numbers in the upstream
order and keep the upstream HSV round trips (``cv2.cvtColor``), so every
output byte is the upstream one (tested on the bundled photos and on
images holding every value in every channel). Two elementwise steps in a
row are one table (the second table indexed by the first); the saturation
and hue changes of mmpose's single HSV round trip are one 3-channel table.
Images that are not 3-channel uint8 go to the upstream code unchanged.
"""
import cv2
import mmcv
import numpy as np
from mmpose.datasets.transforms import PhotometricDistortion
from mmseg.datasets.transforms import PhotoMetricDistortion

from ...registry import TRANSFORMS
from .lookup import UINT8_VALUES, apply_uint8_table


def _is_bgr_uint8(img) -> bool:
    return (isinstance(img, np.ndarray) and img.dtype == np.uint8
            and img.ndim == 3 and img.shape[2] == 3)


def _identity() -> np.ndarray:
    return UINT8_VALUES.copy()


@TRANSFORMS.register_module()
class PhotoMetricDistortionLUT(PhotoMetricDistortion):
    """mmseg ``PhotoMetricDistortion`` with lookup tables: the same random
    draws in the same order and the same output bytes.

    Steps (each with probability 0.5): brightness, contrast (before or
    after the HSV steps, ``mode``), saturation, hue. Brightness and an
    early contrast are one table applied once; saturation and hue each keep
    their own BGR -> HSV -> BGR round trip (a uint8 round trip is not the
    identity, so two of them cannot be merged into one); a late contrast is
    one table, merged with the early ones when neither HSV step runs.

    Args: those of mmseg ``PhotoMetricDistortion``.
    """

    def transform(self, results: dict) -> dict:
        img = results['img']
        if not _is_bgr_uint8(img):
            return super().transform(results)
        random = np.random  # mmseg draws from numpy's global generator
        before = _identity()
        if random.randint(2):
            before = self.convert(
                before, beta=random.uniform(-self.brightness_delta,
                                            self.brightness_delta))
        mode = random.randint(2)
        if mode == 1 and random.randint(2):
            before = self.convert(before, alpha=random.uniform(
                self.contrast_lower, self.contrast_upper))
        saturation = None
        if random.randint(2):
            saturation = self.convert(UINT8_VALUES, alpha=random.uniform(
                self.saturation_lower, self.saturation_upper))
        hue = None
        if random.randint(2):
            hue = np.empty(256, np.uint8)
            hue[:] = (UINT8_VALUES.astype(int) +
                      random.randint(-self.hue_delta, self.hue_delta)) % 180
        after = _identity()
        if mode == 0 and random.randint(2):
            after = self.convert(after, alpha=random.uniform(
                self.contrast_lower, self.contrast_upper))

        if saturation is None and hue is None:
            before = after[before]
            after = None
        if not np.array_equal(before, UINT8_VALUES):
            img = apply_uint8_table(img, before)
        for channel, table in ((1, saturation), (0, hue)):
            if table is not None:
                tables = np.repeat(UINT8_VALUES[:, None, None], 3, axis=2)
                tables[:, 0, channel] = table
                img = mmcv.hsv2bgr(apply_uint8_table(mmcv.bgr2hsv(img), tables))
        if after is not None and not np.array_equal(after, UINT8_VALUES):
            img = apply_uint8_table(img, after)
        results['img'] = img
        return results


@TRANSFORMS.register_module()
class PosePhotometricDistortionLUT(PhotometricDistortion):
    """mmpose ``PhotometricDistortion`` with lookup tables: the same random
    flags (``_random_flags``) and the same output bytes.

    mmpose applies brightness, then the contrast before the HSV steps only
    when ``contrast_mode == 1`` and again after them with the same mode test
    (so a drawn contrast runs twice or not at all; kept as upstream), one
    HSV round trip for saturation and / or hue (the hue byte shifted without
    wrapping at 180, as upstream), then a channel swap. Here the steps
    before the round trip are one table, saturation and hue one 3-channel
    table inside the round trip, the contrast after it one table (merged
    with the first when there is no round trip).

    Args: those of mmpose ``PhotometricDistortion``.
    """

    def transform(self, results: dict) -> dict:
        img = results['img']
        if not _is_bgr_uint8(img):
            return super().transform(results)
        (contrast_mode, brightness_flag, contrast_flag, hsv_mode, swap_flag,
         brightness_beta, contrast_alpha, saturation_alpha, hue_delta,
         swap_channel_order) = self._random_flags()
        before = _identity()
        if brightness_flag:
            before = self._convert(before, beta=brightness_beta)
        contrast = contrast_mode == 1 and contrast_flag
        if contrast:
            before = self._convert(before, alpha=contrast_alpha)
        after = self._convert(UINT8_VALUES, alpha=contrast_alpha) if contrast \
            else None
        if not hsv_mode and after is not None:
            before, after = after[before], None
        if not np.array_equal(before, UINT8_VALUES):
            img = apply_uint8_table(img, before)
        if hsv_mode:
            tables = np.repeat(UINT8_VALUES[:, None, None], 3, axis=2)
            if hsv_mode in (1, 3):
                tables[:, 0, 1] = self._convert(UINT8_VALUES,
                                                alpha=saturation_alpha)
            if hsv_mode in (2, 3):
                tables[:, 0, 0] = UINT8_VALUES.astype(int) + hue_delta
            img = mmcv.hsv2bgr(apply_uint8_table(mmcv.bgr2hsv(img), tables))
        if after is not None:
            img = apply_uint8_table(img, after)
        if swap_flag:  # img[..., swap_channel_order], 2x faster
            swapped = np.empty_like(img)
            cv2.mixChannels([np.ascontiguousarray(img)], [swapped], [
                v for dst, src in enumerate(swap_channel_order)
                for v in (int(src), dst)])
            img = swapped
        results['img'] = img
        return results
