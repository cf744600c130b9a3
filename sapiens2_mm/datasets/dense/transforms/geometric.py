"""Geometric transforms of the dense tasks: image, target fields and camera.

Each one moves ``img``, every target field present (see ``fields.py``) and
the intrinsics ``cam_K`` / ``gt_cam_K`` together, so a 3-D point projected
with the updated intrinsics lands on the pixel the image moved it to. The
official normal, pointmap and albedo variants differ only in the keys they
touch; one transform per operation serves the three tasks here.
"""
import math
from typing import Optional, Sequence, Tuple

import cv2
import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS

from .fields import (
    check_pixel_convention,
    flip_extrinsics,
    flip_field,
    flip_intrinsics,
    letterbox_field,
    pad_field,
    present_fields,
    resize_field,
    scale_intrinsics,
    shift_intrinsics,
    update_cameras,
)


def _check_range(name: str, value: Sequence[float]) -> Tuple[float, float]:
    lo, hi = (float(v) for v in value)
    if not 0 < lo <= hi:
        raise ValueError(f'{name} must satisfy 0 < min <= max, got {value}.')
    return lo, hi


def _resize_all(results: dict, new_w: int, new_h: int, convention: str,
                nominal: float, targets: bool = True,
                resize_fields: bool = True) -> Tuple[float, float]:
    """Resize image (bilinear) and, if ``targets``, every target field to
    (new_w, new_h); update the intrinsics. Returns the actual (sx, sy).

    The ``'center'`` convention scales the intrinsics by the actual size
    ratios; ``'official'`` by the ``nominal`` factor on both axes.
    ``resize_fields=False`` leaves the target arrays to the caller (who
    resizes them later) while the intrinsics move as if they were resized."""
    h, w = results['img'].shape[:2]
    sx, sy = new_w / w, new_h / h
    results['img'] = cv2.resize(results['img'], (new_w, new_h),
                                interpolation=cv2.INTER_LINEAR)
    if targets and resize_fields:
        for key in present_fields(results):
            results[key] = resize_field(key, results[key], (new_w, new_h),
                                        convention)
    kx, ky = (sx, sy) if convention == 'center' else (nominal, nominal)
    update_cameras(results, lambda K: scale_intrinsics(K, kx, ky, convention),
                   targets_moved=targets)
    results['img_shape'] = (new_h, new_w)
    return sx, sy


@TRANSFORMS.register_module()
class DenseRandomScale(BaseTransform):
    """Rescale by a factor drawn uniformly from ``scale_range`` with
    probability ``prob`` (official ``{Normal,Pointmap,Albedo}RandomScale``).

    The new size is ``round(w * s)`` x ``round(h * s)``; the image is
    resized bilinearly, albedo bilinearly, the other targets nearest.

    Args:
        scale_range: (min, max) factor (0.5, 2.0).
        prob: probability of rescaling (0.3 in the official configs).
        pixel_convention: ``'center'`` or ``'official'`` (see fields.py).

    Modified keys: ``img``, ``img_shape``, target fields, ``cam_K``,
    ``gt_cam_K``.
    """

    def __init__(self, scale_range: Sequence[float] = (0.5, 2.0),
                 prob: float = 0.3, pixel_convention: str = 'center') -> None:
        self.scale_range = _check_range('scale_range', scale_range)
        self.prob = prob
        self.pixel_convention = check_pixel_convention(pixel_convention)

    def transform(self, results: dict) -> dict:
        if np.random.rand() >= self.prob:
            return results
        s = np.random.uniform(*self.scale_range)
        h, w = results['img'].shape[:2]
        new_w, new_h = max(int(round(w * s)), 1), max(int(round(h * s)), 1)
        _resize_all(results, new_w, new_h, self.pixel_convention, s)
        return results


@TRANSFORMS.register_module()
class DenseRandomCropContinuous(BaseTransform):
    """Crop a box of random aspect ratio and area with probability ``prob``
    (official ``*RandomCropContinuous``).

    Up to ``num_attempts`` draws of aspect ratio w/h from ``ar_range`` and
    area fraction from ``area_range``; the first box that fits is used, none
    fitting leaves the sample unchanged. The offset is drawn from
    [0, margin] (the official ``random.randint(0, margin + 1)`` can reach
    margin + 1 and then crops one pixel less).

    Args:
        ar_range: (min, max) width / height of the crop (0.5, 2.0).
        area_range: (min, max) crop area / image area (0.4, 1.0).
        num_attempts: draws before giving up (8).
        prob: probability of cropping (0.3).

    Modified keys: ``img``, ``img_shape``, target fields, ``cam_K``,
    ``gt_cam_K`` (the principal point moves by the crop offset).
    """

    def __init__(self, ar_range: Sequence[float] = (0.5, 2.0),
                 area_range: Sequence[float] = (0.4, 1.0),
                 num_attempts: int = 8, prob: float = 0.3) -> None:
        self.ar_range = _check_range('ar_range', ar_range)
        self.area_range = _check_range('area_range', area_range)
        if self.area_range[1] > 1:
            raise ValueError(f'area_range max must be <= 1, got {area_range}.')
        self.num_attempts = num_attempts
        self.prob = prob

    def _draw_box(self, h: int, w: int) -> Optional[Tuple[int, int, int, int]]:
        for _ in range(self.num_attempts):
            ar = np.random.uniform(*self.ar_range)
            area = np.random.uniform(*self.area_range) * h * w
            crop_h = math.sqrt(area / ar)
            crop_w = ar * crop_h
            if crop_w <= w and crop_h <= h:
                crop_h = max(min(int(round(crop_h)), h), 1)
                crop_w = max(min(int(round(crop_w)), w), 1)
                y1 = np.random.randint(0, h - crop_h + 1)
                x1 = np.random.randint(0, w - crop_w + 1)
                return y1, y1 + crop_h, x1, x1 + crop_w
        return None

    def transform(self, results: dict) -> dict:
        if np.random.rand() >= self.prob:
            return results
        h, w = results['img'].shape[:2]
        box = self._draw_box(h, w)
        if box is None:
            return results
        y1, y2, x1, x2 = box
        results['img'] = results['img'][y1:y2, x1:x2]
        for key in present_fields(results):
            results[key] = results[key][y1:y2, x1:x2]
        update_cameras(results, lambda K: shift_intrinsics(K, -x1, -y1))
        results['img_shape'] = (y2 - y1, x2 - x1)
        return results


@TRANSFORMS.register_module()
class DenseRandomFlip(BaseTransform):
    """Horizontal flip with probability ``prob`` (official ``*RandomFlip``).

    Normals and pointmaps negate x, ``cx -> W - 1 - cx`` and the first row of
    the world-to-camera extrinsics ``cam_extrinsics`` is negated (the camera
    x axis changes sign). Sets ``flip`` and ``flip_direction``.

    With ``flip_targets=False`` (flip test: the targets stay at the original
    size, the estimator mirrors its prediction back because ``flip`` is
    set) only the image and its intrinsics ``cam_K`` are mirrored; targets,
    ``gt_cam_K`` and the extrinsics are left as they are.

    After a letterbox (the flip test flips the letterboxed image) the
    recorded ``padding_size`` is mirrored too: the left padding becomes the
    right one. Otherwise an odd letterbox (left one pixel narrower than
    right) would be cropped one pixel off before the prediction is mirrored
    back.

    Args:
        prob: probability of flipping (0.3).
        flip_targets: also flip the targets, ``gt_cam_K`` and extrinsics.
    """

    def __init__(self, prob: float = 0.3, flip_targets: bool = True) -> None:
        self.prob = prob
        self.flip_targets = flip_targets

    def transform(self, results: dict) -> dict:
        flip = bool(np.random.rand() < self.prob)
        results['flip'] = flip
        results['flip_direction'] = 'horizontal' if flip else None
        if not flip:
            return results
        width = results['img'].shape[1]
        results['img'] = np.ascontiguousarray(results['img'][:, ::-1])
        if results.get('padding_size') is not None:
            left, right, top, bottom = results['padding_size']
            results['padding_size'] = (right, left, top, bottom)
        update_cameras(results, lambda K: flip_intrinsics(K, width),
                       targets_moved=self.flip_targets)
        if not self.flip_targets:
            return results
        for key in present_fields(results):
            results[key] = flip_field(key, results[key])
        if results.get('cam_extrinsics') is not None:
            results['cam_extrinsics'] = flip_extrinsics(
                results['cam_extrinsics'])
        return results


@TRANSFORMS.register_module()
class DenseResizePad(BaseTransform):
    """Aspect-preserving resize into (height, width) and a centred letterbox
    (official ``*Resize`` in training, ``*ResizePadImage`` at test time).

    The factor is ``r = min(width / w, height / h)``; the resized size is
    ``round(w * r)`` (``size_rounding='round'``, official training) or
    ``int(w * r)`` (``'floor'``, official test). Padding is split with
    ``left = pad // 2``, ``top = pad // 2`` and recorded as
    ``padding_size = (left, right, top, bottom)``. The image is resized
    bilinearly and padded with ``pad_val``; target fields (albedo bilinear,
    the rest nearest) are padded with 0 (mask False).

    With ``resize_targets=False`` (validation / test) only the image moves:
    the targets keep the original size for evaluation there, ``cam_K``
    follows the image and ``gt_cam_K`` keeps the targets' intrinsics. The
    official validation pipelines use round() and record no padding; here
    validation and test share the test transform, so predictions can be
    un-letterboxed exactly.

    ``align`` > 1 floors the resized size and the left/top padding to
    multiples of ``align`` (the image may stretch by up to ``align - 1``
    pixels per axis; ``scale_factor`` records the actual factors). The 4K
    heads predict at half the input size (``align=2``): their letterbox
    padding is then a whole number of output pixels and can be cropped
    exactly (see :func:`sapiens2_mm.models.heads.dense.letterbox.
    output_padding`).

    ``output_scale`` < 1 also does the job of a following
    :class:`DenseToOutputSize` with that scale, with the same result (every
    array and matrix equal): the target fields go straight to the head's
    output frame (:func:`~.fields.letterbox_field`) instead of being
    letterboxed at the input size and resized again, and ``cam_K`` /
    ``gt_cam_K`` are scaled to that frame; ``output_shape`` is recorded. At
    4096x3072 this skips a (4096, 3072, 3) float32 map per field.

    Args:
        height: output height (1024).
        width: output width (768).
        size_rounding: ``'round'`` or ``'floor'``.
        resize_targets: resize and pad the target fields too.
        pad_val: image padding value (0).
        pixel_convention: ``'center'`` or ``'official'`` (see fields.py).
        align: multiple of the resized size and of the left/top padding
            (1: none; 2 for the half-resolution 4K heads). ``height`` and
            ``width`` must be multiples of it.
        output_scale: the head's output size / input size (1: the targets
            stay in the input frame; 0.5 for the 4K heads, see above);
            ``height`` and ``width`` times it must be whole pixels.

    Modified keys: ``img``, ``img_shape``, ``padding_size``,
    ``scale_factor`` ((sx, sy) of this resize), ``keep_ratio``, target
    fields, ``cam_K``, ``gt_cam_K`` and, with ``output_scale`` < 1,
    ``output_shape``.
    """

    def __init__(self, height: int = 1024, width: int = 768,
                 size_rounding: str = 'round', resize_targets: bool = True,
                 pad_val: float = 0, pixel_convention: str = 'center',
                 align: int = 1, output_scale: float = 1.0) -> None:
        if size_rounding not in ('round', 'floor'):
            raise ValueError(f"size_rounding must be 'round' or 'floor', got "
                             f'{size_rounding!r}.')
        if align < 1 or height % align or width % align:
            raise ValueError(
                f'DenseResizePad align={align} must be >= 1 and divide the '
                f'output size {height}x{width}.')
        out_h, out_w = height * output_scale, width * output_scale
        if not 0 < output_scale <= 1 or out_h != int(out_h) or \
                out_w != int(out_w):
            raise ValueError(
                f'DenseResizePad output_scale={output_scale} must be in (0, '
                f'1] and give whole pixels of the output size {height}x'
                f'{width} (e.g. 0.5 for the 4K heads).')
        self.output_scale = float(output_scale)
        self.output_hw = (int(out_h), int(out_w))
        self.align = int(align)
        self.height, self.width = height, width
        self.size_rounding = size_rounding
        self.resize_targets = resize_targets
        self.pad_val = pad_val
        self.pixel_convention = check_pixel_convention(pixel_convention)

    def transform(self, results: dict) -> dict:
        h, w = results['img'].shape[:2]
        r = min(self.width / w, self.height / h)
        rnd = round if self.size_rounding == 'round' else math.floor
        a = self.align
        new_w = min(max(int(rnd(w * r)) // a * a, a), self.width)
        new_h = min(max(int(rnd(h * r)) // a * a, a), self.height)
        direct = self.output_scale != 1
        fields = {key: results[key] for key in present_fields(results)} \
            if self.resize_targets and direct else {}
        sx, sy = _resize_all(results, new_w, new_h, self.pixel_convention,
                             r, targets=self.resize_targets,
                             resize_fields=not direct)
        left = (self.width - new_w) // 2 // a * a
        top = (self.height - new_h) // 2 // a * a
        padding = (left, self.width - new_w - left, top,
                   self.height - new_h - top)
        results['img'] = pad_field(results['img'], padding, self.pad_val)
        if self.resize_targets and not direct:
            for key in present_fields(results):
                results[key] = pad_field(results[key], padding, 0)
        update_cameras(results, lambda K: shift_intrinsics(K, left, top),
                       targets_moved=self.resize_targets)
        results['img_shape'] = (self.height, self.width)
        results['padding_size'] = padding
        results['scale_factor'] = (sx, sy)
        results['keep_ratio'] = True
        if direct:
            self._to_output_frame(results, fields, (new_w, new_h), padding)
        return results

    def _to_output_frame(self, results: dict, fields: dict,
                         content_wh: Tuple[int, int],
                         padding: Tuple[int, int, int, int]) -> None:
        """What DenseToOutputSize(scale=output_scale) does after the plain
        letterbox, with the fields taken from their original size."""
        out_h, out_w = self.output_hw
        for key, value in fields.items():
            results[key] = letterbox_field(key, value, content_wh, padding,
                                           (out_w, out_h),
                                           self.pixel_convention)
        update_cameras(
            results, lambda K: scale_intrinsics(
                K, out_w / self.width, out_h / self.height,
                self.pixel_convention),
            targets_moved=self.resize_targets)
        results['output_shape'] = (out_h, out_w)


@TRANSFORMS.register_module()
class DenseToOutputSize(BaseTransform):
    """Move the targets and the network intrinsics to the head's output frame.

    The 4K dense heads predict at ``scale`` (0.5) times the network input:
    2048x1536 for a 4096x3072 input. Placed after :class:`DenseResizePad`,
    this makes the loss compare maps of one size without upsampling the
    prediction:

    * ``resize_targets=True`` (training: the targets were letterboxed with
      the image): every target field is resized to the output size (albedo
      bilinear, the rest nearest, as every dense resize) and ``cam_K`` /
      ``gt_cam_K`` are scaled with it, so the pointmap targets and the
      intrinsics-consistency loss live on the output pixel grid.
    * ``resize_targets=False`` (validation / test: the targets keep the
      original size for scoring there): only ``cam_K`` is scaled, so the
      canonical scale of :class:`PointmapGenerateTarget` refers to the
      output frame as in training.

    ``img``, ``img_shape`` and ``padding_size`` stay those of the network
    input; ``output_shape`` (H_out, W_out) is recorded.

    Args:
        scale: output size / input size; the input size times ``scale`` must
            be whole pixels.
        resize_targets: see above.
        pixel_convention: ``'center'`` or ``'official'`` (see fields.py).

    Raises:
        ValueError: an input size that ``scale`` does not divide.
    """

    def __init__(self, scale: float = 0.5, resize_targets: bool = True,
                 pixel_convention: str = 'center') -> None:
        if not 0 < scale <= 1:
            raise ValueError(f'DenseToOutputSize scale must be in (0, 1], '
                             f'got {scale}.')
        self.scale = float(scale)
        self.resize_targets = resize_targets
        self.pixel_convention = check_pixel_convention(pixel_convention)

    def transform(self, results: dict) -> dict:
        h, w = results['img'].shape[:2]
        out_h, out_w = h * self.scale, w * self.scale
        if out_h != int(out_h) or out_w != int(out_w):
            raise ValueError(
                f'DenseToOutputSize(scale={self.scale}) needs an input whose '
                f'size times the scale is whole pixels, got {h}x{w} '
                f'({results.get("img_path")}); letterbox to the config size '
                'first (DenseResizePad).')
        out_h, out_w = int(out_h), int(out_w)
        if self.resize_targets:
            for key in present_fields(results):
                results[key] = resize_field(key, results[key], (out_w, out_h),
                                            self.pixel_convention)
        update_cameras(
            results, lambda K: scale_intrinsics(K, out_w / w, out_h / h,
                                                self.pixel_convention),
            targets_moved=self.resize_targets)
        results['output_shape'] = (out_h, out_w)
        return results
