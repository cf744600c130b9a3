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


def resize_field(key: str, value: np.ndarray, size_wh: Tuple[int, int],
                 convention: str = 'center') -> np.ndarray:
    """Resize one target field to ``size_wh`` = (width, height)."""
    if _rule(key, 'resize', 'nearest') == 'bilinear':
        interp = cv2.INTER_LINEAR
    elif convention == 'center':
        interp = cv2.INTER_NEAREST_EXACT
    else:
        interp = cv2.INTER_NEAREST
    if value.dtype == bool:
        out = cv2.resize(value.astype(np.uint8), size_wh,
                         interpolation=interp)
        return out.astype(bool)
    return cv2.resize(value, size_wh, interpolation=interp)


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
