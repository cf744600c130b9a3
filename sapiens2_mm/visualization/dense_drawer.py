"""Colour images of dense predictions: normals, depth, albedo.

Conventions (the official demos' drawings):

* normals: ``(n + 1) / 2 * 255`` with x -> red, y -> green, z -> blue;
* depth: inverse depth through the turbo colour map between a near and a far
  bound (near = red, far = blue); invalid depth (non-finite or <= 0) black;
* albedo: ``255 * clamp(a, 0, 1)``.

With a foreground mask (the official demos' ``--seg_dir``), the background
of a drawing is a flat colour (normals black, albedo and depth grey 100, as
the official demos) or the photo (``background='photo'``, the demos'
``--no-black-background``); a depth drawing's bounds then come from the
foreground only.

Normals and albedo become 8-bit by truncation (``astype(np.uint8)``) as the
official demos do (``rounding='truncate'``); ``rounding='round'`` rounds to
the nearest level instead (at most one level brighter; the 8-bit image is
then the closest to the float map).

All functions return (H, W, 3) uint8 **BGR** images (what ``cv2.imwrite``
expects), so a written PNG shows the colours above.
"""
from typing import Optional, Tuple

import cv2
import numpy as np

# The official pointmap demo clamps its depth bounds to this range (metres).
DEPTH_CLAMP = (0.1, 250.0)
# ... and takes them from the 1st / 99th percentiles of the valid depth.
DEPTH_PERCENTILES = (1.0, 99.0)
LEGEND_HEIGHT = 24
#: How float colours in [0, 255] become 8-bit (see the module docstring).
ROUNDINGS = ('truncate', 'round')
#: What the background of a masked drawing shows.
BACKGROUNDS = ('colour', 'photo')
#: The official demos' background colours (BGR) per drawn field.
BACKGROUND_COLOURS = {'pred_normal': (0, 0, 0),
                      'pred_depth': (100, 100, 100),
                      'pred_albedo': (100, 100, 100)}


def mask_background(drawing: np.ndarray, foreground: Optional[np.ndarray],
                    image: np.ndarray, colour: Tuple[int, int, int],
                    background: str = 'colour') -> np.ndarray:
    """``drawing`` (H, W, 3) with the pixels outside ``foreground`` (H, W)
    set to ``colour`` or, with ``background='photo'``, to ``image``'s.

    Raises:
        ValueError: an unknown ``background`` or a mask of another size.
    """
    if background not in BACKGROUNDS:
        raise ValueError(f'background must be one of {BACKGROUNDS}, got '
                         f'{background!r}.')
    if foreground is None:
        return drawing
    if foreground.shape != drawing.shape[:2]:
        raise ValueError(f'foreground mask {foreground.shape} does not match '
                         f'the drawing {drawing.shape[:2]}.')
    out = drawing.copy()
    back = ~foreground
    out[back] = image[back] if background == 'photo' else colour
    return out


def to_uint8(levels: np.ndarray, rounding: str = 'truncate') -> np.ndarray:
    """Float colour levels -> uint8, clipped to [0, 255], by ``rounding``."""
    if rounding == 'round':
        levels = np.round(levels)
    elif rounding != 'truncate':
        raise ValueError(f'rounding must be one of {ROUNDINGS}, got '
                         f'{rounding!r}.')
    return np.clip(levels, 0, 255).astype(np.uint8)


def normal_to_bgr(normal: np.ndarray, rounding: str = 'truncate'
                  ) -> np.ndarray:
    """(H, W, 3) unit normals -> (H, W, 3) uint8 BGR, ``(n + 1) / 2 * 255``.

    Non-finite components are drawn as 0 (black).
    """
    rgb = (np.nan_to_num(normal, nan=-1.0, posinf=1.0, neginf=-1.0) + 1) / 2
    rgb = to_uint8(rgb * 255, rounding)
    return np.ascontiguousarray(rgb[..., ::-1])


def albedo_to_bgr(albedo: np.ndarray, rounding: str = 'truncate'
                  ) -> np.ndarray:
    """(H, W, 3) RGB albedo in [0, 1] (clamped) -> (H, W, 3) uint8 BGR."""
    rgb = np.clip(np.nan_to_num(albedo), 0.0, 1.0)
    rgb = to_uint8(rgb * 255, rounding)
    return np.ascontiguousarray(rgb[..., ::-1])


def valid_depth(depth: np.ndarray) -> np.ndarray:
    """Boolean (H, W): finite and positive depth."""
    return np.isfinite(depth) & (depth > 0)


def depth_range(depth: np.ndarray,
                foreground: Optional[np.ndarray] = None
                ) -> Optional[Tuple[float, float]]:
    """(near, far) bounds of a depth map in metres, or None if no pixel is
    valid: the 1st and 99th percentiles of the valid depth (in
    ``foreground`` only, when given), clamped to [0.1, 250] m (far > near
    is guaranteed)."""
    valid = valid_depth(depth)
    if foreground is not None:
        valid &= foreground
    if not valid.any():
        return None
    lo, hi = np.percentile(depth[valid], DEPTH_PERCENTILES)
    lo = float(np.clip(lo, *DEPTH_CLAMP))
    hi = float(np.clip(hi, *DEPTH_CLAMP))
    if hi <= lo:
        hi = lo * 1.01 + 1e-6
    return lo, hi


def depth_to_bgr(depth: np.ndarray,
                 bounds: Optional[Tuple[float, float]] = None) -> np.ndarray:
    """(H, W) metric depth -> (H, W, 3) uint8 BGR turbo colours of the
    inverse depth between ``bounds`` (default :func:`depth_range`)."""
    out = np.zeros(depth.shape + (3, ), np.uint8)
    bounds = depth_range(depth) if bounds is None else bounds
    if bounds is None:
        return out
    near, far = bounds
    valid = valid_depth(depth)
    inv = np.zeros(depth.shape, np.float64)
    inv[valid] = 1.0 / np.clip(depth[valid], near, far)
    t = (inv - 1.0 / far) / (1.0 / near - 1.0 / far)
    levels = np.round(np.clip(t, 0, 1) * 255).astype(np.uint8)
    colour = cv2.applyColorMap(levels, cv2.COLORMAP_TURBO)
    out[valid] = colour[valid]
    return out


def depth_legend(width: int, bounds: Optional[Tuple[float, float]]
                 ) -> np.ndarray:
    """(24, W, 3) strip: the colour bar from near (left) to far (right) with
    the two bounds written in metres."""
    strip = np.zeros((LEGEND_HEIGHT, width, 3), np.uint8)
    if bounds is None:
        cv2.putText(strip, 'no valid depth', (4, 17),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1)
        return strip
    near, far = bounds
    # left = near: the inverse depth falls from 1 to 0 along the bar
    levels = np.round(np.linspace(255, 0, width)).astype(np.uint8)
    bar = cv2.applyColorMap(levels[None], cv2.COLORMAP_TURBO)
    strip[:] = bar
    for text, x in ((f'{near:.2f} m', 4), (f'{far:.2f} m', None)):
        size = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.45, 1)[0]
        x = width - size[0] - 4 if x is None else x
        cv2.putText(strip, text, (x, 17), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                    (0, 0, 0), 3)
        cv2.putText(strip, text, (x, 17), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                    (255, 255, 255), 1)
    return strip


def side_by_side(image: np.ndarray, drawing: np.ndarray) -> np.ndarray:
    """``[image | drawing]`` (drawing resized to the image height if needed,
    a lower strip such as a legend padded with black under the image)."""
    if drawing.shape[0] != image.shape[0]:
        pad = np.zeros((drawing.shape[0] - image.shape[0], ) +
                       image.shape[1:], np.uint8)
        image = np.concatenate([image, pad], axis=0)
    return np.concatenate([image, drawing], axis=1)


def colour_dense_field(name: str, value: np.ndarray, image: np.ndarray,
                       foreground: Optional[np.ndarray] = None,
                       background: str = 'colour',
                       rounding: str = 'truncate',
                       bounds: Optional[Tuple[float, float]] = None
                       ) -> np.ndarray:
    """(H, W, 3) uint8 BGR colours of one dense field (``pred_normal``,
    ``pred_depth`` or ``pred_albedo``), background masked (module
    docstring). ``bounds``: the depth bounds (default from the foreground).
    """
    if name == 'pred_normal':
        drawing = normal_to_bgr(value, rounding)
    elif name == 'pred_albedo':
        drawing = albedo_to_bgr(value, rounding)
    elif name == 'pred_depth':
        if bounds is None:
            bounds = depth_range(value, foreground)
        drawing = depth_to_bgr(value, bounds)
    else:
        raise ValueError(f'No colouring for {name!r}.')
    return mask_background(drawing, foreground, image,
                           BACKGROUND_COLOURS[name], background)


def draw_dense_prediction(image: np.ndarray, fields: dict,
                          foreground: Optional[np.ndarray] = None,
                          background: str = 'colour',
                          rounding: str = 'truncate') -> np.ndarray:
    """``[image | prediction]`` for whichever dense prediction ``fields``
    holds, checked in the order ``pred_normal``, ``pred_depth``,
    ``pred_albedo``.

    Args:
        image: (H, W, 3) uint8 BGR input.
        fields: name -> (H, W, C) float array (channels last).
        foreground: (H, W) bool mask, or None (whole frame).
        background: ``'colour'`` (the official flat colours) or ``'photo'``
            outside the foreground.
        rounding: see :func:`to_uint8`.

    Raises:
        ValueError: none of the three fields is given.
    """
    def colour(name, value, bounds=None):
        return colour_dense_field(name, value, image, foreground, background,
                                  rounding, bounds)

    if fields.get('pred_normal') is not None:
        return side_by_side(image, colour('pred_normal',
                                          fields['pred_normal']))
    if fields.get('pred_depth') is not None:
        depth = fields['pred_depth']
        depth = depth[..., 0] if depth.ndim == 3 else depth
        bounds = depth_range(depth, foreground)
        drawing = np.concatenate(
            [colour('pred_depth', depth, bounds),
             depth_legend(depth.shape[1], bounds)], axis=0)
        return side_by_side(image, drawing)
    if fields.get('pred_albedo') is not None:
        return side_by_side(image, colour('pred_albedo',
                                          fields['pred_albedo']))
    raise ValueError(
        f'No dense prediction to draw; got fields {sorted(fields)}, expected '
        'pred_normal, pred_depth or pred_albedo.')
