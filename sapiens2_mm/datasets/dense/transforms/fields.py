"""Target fields and camera bookkeeping shared by the dense transforms.

The transforms act on every declared target field present in ``results``
(:func:`~sapiens2_mm.structures.dense_target_fields`, mmseg's ``seg_fields``
idea) instead of hard-coded keys, and resize and flip each one by its
declaration (:class:`~sapiens2_mm.structures.DenseField`: ``resize``,
``flip``). Fields are numpy arrays in image layout: ``gt_mask`` (H, W) bool,
``gt_depth`` (H, W) float32, ``gt_normal`` / ``gt_pointmap`` / ``gt_albedo``
(H, W, 3) float32.

Pixel conventions (``pixel_convention``):

* ``'center'`` (default): pixel ``u`` covers [u - 0.5, u + 0.5], as cv2's
  bilinear resize assumes. Resizing by (sx, sy) maps ``u -> (u + 0.5) sx -
  0.5``, so ``cx' = (cx + 0.5) sx - 0.5``, and nearest-neighbour targets use
  ``cv2.INTER_NEAREST_EXACT`` (the source pixel whose centre is nearest), so
  image, targets and intrinsics stay aligned.
* ``'official'``: ``cx' = cx * s`` and ``cv2.INTER_NEAREST`` as the official
  transforms do (half a pixel off against the flip's ``W - 1 - cx``).
"""
from typing import Iterable, List, Optional, Tuple

import cv2
import numpy as np

from sapiens2_mm.structures import dense_field, dense_target_fields

from ...transforms.interpolation import nearest_indices

PIXEL_CONVENTIONS = ('center', 'official')

#: Camera matrices in ``results`` that follow the image (``cam_K``) and the
#: targets (``gt_cam_K``; differs from ``cam_K`` once a test-time resize has
#: moved the image but not the targets).
CAMERA_KEYS = ('cam_K', 'gt_cam_K')


def check_pixel_convention(convention: str) -> str:
    if convention not in PIXEL_CONVENTIONS:
        raise ValueError(f'pixel_convention={convention!r}; expected one of '
                         f'{PIXEL_CONVENTIONS}.')
    return convention


def present_fields(results: dict,
                   fields: Optional[Iterable[str]] = None) -> List[str]:
    """Target fields present (and not None) in ``results`` (default: the
    declared ones)."""
    fields = dense_target_fields() if fields is None else fields
    return [k for k in fields if results.get(k) is not None]


def _rule(key: str, attr: str, default: str) -> str:
    """``attr`` of the declared map of target ``key`` (``default`` for
    ``gt_mask`` and undeclared keys)."""
    field = dense_field(key)
    return default if field is None else getattr(field, attr)


def _interpolation(key: str, convention: str) -> int:
    if _rule(key, 'resize', 'nearest') == 'bilinear':
        return cv2.INTER_LINEAR
    if convention == 'center':
        return cv2.INTER_NEAREST_EXACT
    return cv2.INTER_NEAREST


def resize_field(key: str, value: np.ndarray, size_wh: Tuple[int, int],
                 convention: str = 'center') -> np.ndarray:
    """Resize one target field to ``size_wh`` = (width, height)."""
    interp = _interpolation(key, convention)
    if value.dtype == bool:
        out = cv2.resize(value.astype(np.uint8), size_wh,
                         interpolation=interp)
        return out.astype(bool)
    return cv2.resize(value, size_wh, interpolation=interp)


def _nearest_source(size: int, content: int, before: int, total: int,
                    out: int, interp: int) -> np.ndarray:
    """Per output pixel of one axis, the source pixel that a nearest resize
    ``size -> content``, ``before`` pixels of padding and a nearest resize
    ``total -> out`` select, or -1 for padding (cv2's index tables,
    :func:`nearest_indices`, composed)."""
    in_content = nearest_indices(size, content, interp)
    padded = nearest_indices(total, out, interp) - before
    inside = (padded >= 0) & (padded < content)
    return np.where(inside, in_content[np.clip(padded, 0, content - 1)], -1)


def letterbox_field(key: str, value: np.ndarray, content_wh: Tuple[int, int],
                    padding: Tuple[int, int, int, int],
                    out_wh: Tuple[int, int],
                    convention: str = 'center') -> np.ndarray:
    """A target field letterboxed with the image and brought to the head's
    output frame in one step, equal (every value) to
    ``resize_field(key, pad_field(resize_field(key, value, content_wh),
    padding), out_wh)`` without the full-size map.

    * Nearest fields (all but albedo) are copies: the two index tables are
      composed (:func:`_nearest_source`) and the output gathered from
      ``value`` directly.
    * Bilinear fields (albedo): the content is resized as in the two-step
      path; when the output frame is the input frame divided by an integer
      ``k`` that divides the content size and the padding (``align``), every
      output pixel mixes one k x k block of either padding or content, so
      the content is reduced alone and padded in the output frame. Otherwise
      the two steps run as written.

    Args:
        key: the target field's name (its resize rule).
        value: the field, shape (H, W) or (H, W, C).
        content_wh: the resized field's size inside the letterbox.
        padding: (left, right, top, bottom) of the letterbox, in pixels of
            the network input.
        out_wh: the output frame's size (width, height).
        convention: ``'center'`` or ``'official'``.

    Returns:
        np.ndarray: the field in the output frame, shape (out_h, out_w) or
        (out_h, out_w, C), padding 0 (False).
    """
    left, right, top, bottom = padding
    (cw, ch), (ow, oh) = content_wh, out_wh
    total_w, total_h = cw + left + right, ch + top + bottom
    interp = _interpolation(key, convention)
    if interp != cv2.INTER_LINEAR:
        h, w = value.shape[:2]
        rows = _nearest_source(h, ch, top, total_h, oh, interp)
        cols = _nearest_source(w, cw, left, total_w, ow, interp)
        if (rows < 0).all() or (cols < 0).all():  # only padding is sampled
            return pad_field(value[:0, :0], (ow, 0, oh, 0))
        # the content is one block of rows and columns, padding around it
        r0, r1 = np.flatnonzero(rows >= 0)[[0, -1]]
        c0, c1 = np.flatnonzero(cols >= 0)[[0, -1]]
        inner = value.take(rows[r0:r1 + 1], 0).take(cols[c0:c1 + 1], 1)
        return pad_field(inner, (c0, ow - 1 - c1, r0, oh - 1 - r1))
    content = resize_field(key, value, content_wh, convention)
    k = total_w // ow
    if total_w == k * ow and total_h == k * oh and not (
            cw % k or ch % k or left % k or top % k):
        reduced = resize_field(key, content, (cw // k, ch // k), convention)
        return pad_field(reduced, (left // k, right // k, top // k,
                                   bottom // k))
    return resize_field(key, pad_field(content, padding), out_wh, convention)


def pad_field(value: np.ndarray, padding: Tuple[int, int, int, int],
              pad_val: float = 0) -> np.ndarray:
    """Pad (left, right, top, bottom) with a constant."""
    left, right, top, bottom = padding
    widths = ((top, bottom), (left, right)) + ((0, 0),) * (value.ndim - 2)
    return np.pad(value, widths, mode='constant',
                  constant_values=np.array(pad_val).astype(value.dtype))


def flip_field(key: str, value: np.ndarray) -> np.ndarray:
    """Mirror left-right; maps declared ``flip='negate_x'`` (camera-frame
    vectors) also negate their x component."""
    out = value[:, ::-1].copy()
    if _rule(key, 'flip', 'mirror') == 'negate_x':
        out[..., 0] = -out[..., 0]
    return out


def scale_intrinsics(K: np.ndarray, sx: float, sy: float,
                     convention: str = 'center') -> np.ndarray:
    """Intrinsics after resizing the image by (sx, sy)."""
    K = np.array(K, dtype=np.float64)
    K[0, 0] *= sx
    K[1, 1] *= sy
    K[0, 1] *= sx
    if convention == 'center':
        K[0, 2] = (K[0, 2] + 0.5) * sx - 0.5
        K[1, 2] = (K[1, 2] + 0.5) * sy - 0.5
    else:
        K[0, 2] *= sx
        K[1, 2] *= sy
    return K


def shift_intrinsics(K: np.ndarray, dx: float, dy: float) -> np.ndarray:
    """Intrinsics after moving the image origin by (dx, dy) pixels
    (negative for a crop offset, positive for padding)."""
    K = np.array(K, dtype=np.float64)
    K[0, 2] += dx
    K[1, 2] += dy
    return K


def flip_intrinsics(K: np.ndarray, width: int) -> np.ndarray:
    """Intrinsics after a horizontal flip of a ``width``-pixel image
    (pixel u -> width - 1 - u, so cx -> width - 1 - cx)."""
    K = np.array(K, dtype=np.float64)
    K[0, 2] = width - 1 - K[0, 2]
    K[0, 1] = -K[0, 1]
    return K


def flip_extrinsics(M: np.ndarray) -> np.ndarray:
    """World-to-camera extrinsics after a horizontal flip: the camera x axis
    changes sign, i.e. the first row of M is negated."""
    M = np.array(M, dtype=np.float64)
    M[0, :] = -M[0, :]
    return M


def update_cameras(results: dict, fn, targets_moved: bool = True) -> None:
    """Apply ``fn(K)`` to ``cam_K`` and, when the targets moved with the
    image, to ``gt_cam_K``."""
    keys = CAMERA_KEYS if targets_moved else CAMERA_KEYS[:1]
    for key in keys:
        if results.get(key) is not None:
            results[key] = fn(results[key])
