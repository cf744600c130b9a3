"""Color images of dense predictions: normals, depth, albedo.

Conventions (the official demos' drawings):

* normals: ``(n + 1) / 2 * 255`` with x -> red, y -> green, z -> blue;
* depth: inverse depth through the turbo color map between a near and a far
  bound (near = red, far = blue); invalid depth (non-finite or <= 0) black;
* albedo: ``255 * clamp(a, 0, 1)``.

With a foreground mask (the official demos' ``--seg_dir``), the background
of a drawing is a flat color (normals black, albedo and depth grey 100, as
the official demos) or the photo (``background='photo'``, the demos'
``--no-black-background``); a depth drawing's bounds then come from the
foreground only.

Normals and albedo become 8-bit by truncation (``astype(np.uint8)``) as the
official demos do (``rounding='truncate'``); ``rounding='round'`` rounds to
the nearest level instead (at most one level brighter; the 8-bit image is
then the closest to the float map).

All functions return (H, W, 3) uint8 **BGR** images (what ``cv2.imwrite``
expects), so a written PNG shows the colors above.

Which map is drawn how is declared once per map
(:class:`~sapiens2_mm.structures.DenseField` ``coloring``): a name of
:data:`COLORINGS` or a :class:`Coloring` object of the task's own.
"""
from typing import Optional, Tuple

import cv2
import numpy as np

from ..structures import DenseField, dense_field, dense_fields
from .colors import (  # noqa: F401 - part of this module's interface
    LEGEND_HEIGHT,
    ROUNDINGS,
    albedo_to_bgr,
    normal_to_bgr,
    to_uint8,
)
from .legends import normal_key, titled

# The official pointmap demo clamps its depth bounds to this range (metres).
DEPTH_CLAMP = (0.1, 250.0)
# ... and takes them from the 1st / 99th percentiles of the valid depth.
DEPTH_PERCENTILES = (1.0, 99.0)
#: What the background of a masked drawing shows.
BACKGROUNDS = ('color', 'photo')


def mask_background(drawing: np.ndarray, foreground: Optional[np.ndarray],
                    image: np.ndarray, color: Tuple[int, int, int],
                    background: str = 'color') -> np.ndarray:
    """``drawing`` (H, W, 3) with the pixels outside ``foreground`` (H, W)
    set to ``color`` or, with ``background='photo'``, to ``image``'s.

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
    out[back] = image[back] if background == 'photo' else color
    return out


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
    """(H, W) metric depth -> (H, W, 3) uint8 BGR turbo colors of the
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
    color = cv2.applyColorMap(levels, cv2.COLORMAP_TURBO)
    out[valid] = color[valid]
    return out


def depth_legend(width: int, bounds: Optional[Tuple[float, float]]
                 ) -> np.ndarray:
    """(24, W, 3) strip: the color bar from near (left) to far (right) with
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


def side_by_side(image: np.ndarray, *drawings: np.ndarray) -> np.ndarray:
    """``[image | drawing | ...]``, each panel padded with black below to the
    tallest one (a lower strip such as a legend under a drawing)."""
    panels = (image, ) + drawings
    height = max(p.shape[0] for p in panels)
    padded = [
        p if p.shape[0] == height else np.concatenate(
            [p, np.zeros((height - p.shape[0], ) + p.shape[1:], np.uint8)],
            axis=0) for p in panels
    ]
    return np.concatenate(padded, axis=1)


class Coloring:
    """How one dense map becomes a drawing (subclass it for a new map).

    Attributes:
        background: BGR of a masked drawing outside the foreground.
    """
    background: Tuple[int, int, int] = (0, 0, 0)

    def bounds(self, value: np.ndarray, foreground: Optional[np.ndarray]
               ) -> Optional[Tuple[float, float]]:
        """Value bounds of the colors (none by default)."""
        return None

    def colors(self, value: np.ndarray, rounding: str = 'truncate',
               bounds: Optional[Tuple[float, float]] = None) -> np.ndarray:
        """(H, W, 3) uint8 BGR colors of the map (channels last)."""
        raise NotImplementedError

    def panel(self, drawing: np.ndarray,
              bounds: Optional[Tuple[float, float]] = None) -> np.ndarray:
        """The drawing with its key below it (none by default)."""
        return drawing

    def panels(self, color, value: np.ndarray, gt: Optional[np.ndarray],
               gt_mask: Optional[np.ndarray], foreground: Optional[np.ndarray],
               rounding: str) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The prediction panel and the ground-truth panel (or None).

        ``color(value, bounds)`` colors the prediction with the background
        of the foreground mask; the ground truth is black outside
        ``gt_mask``."""
        pred = self.panel(color(value, None))
        if gt is None:
            return pred, None
        return pred, _masked(self.panel(self.colors(gt, rounding)), gt_mask)


class NormalColoring(Coloring):
    """Normals: ``(n + 1) / 2 * 255``, the color key below."""

    def colors(self, value, rounding='truncate', bounds=None):
        return normal_to_bgr(value, rounding)

    def panel(self, drawing, bounds=None):
        return np.concatenate([drawing, normal_key(drawing.shape[1])], axis=0)


class RGBColoring(Coloring):
    """RGB in [0, 1] (albedo): ``255 * clamp(a, 0, 1)``, grey background."""
    background = (100, 100, 100)

    def colors(self, value, rounding='truncate', bounds=None):
        return albedo_to_bgr(value, rounding)


class InverseDepthColoring(Coloring):
    """Metric depth: turbo colors of the inverse depth between near and far
    bounds, the color bar below, grey background. With ground truth both
    panels share the ground truth's bounds (equal colors, equal depths)."""
    background = (100, 100, 100)

    def bounds(self, value, foreground):
        return depth_range(value, foreground)

    def colors(self, value, rounding='truncate', bounds=None):
        return depth_to_bgr(value, bounds)

    def panel(self, drawing, bounds=None):
        return np.concatenate([drawing, depth_legend(drawing.shape[1],
                                                     bounds)], axis=0)

    def panels(self, color, value, gt, gt_mask, foreground, rounding):
        if gt is not None:
            gt = np.where(gt_mask, gt, 0.0) if gt_mask is not None else gt
        bounds = depth_range(gt) if gt is not None else depth_range(
            value, foreground)
        pred = self.panel(color(value, bounds), bounds)
        gt = None if gt is None else self.panel(depth_to_bgr(gt, bounds),
                                                bounds)
        return pred, gt


#: The colorings a :class:`~sapiens2_mm.structures.DenseField` can name.
COLORINGS = {'normal': NormalColoring(), 'rgb': RGBColoring(),
             'inverse_depth': InverseDepthColoring()}


def coloring_of(field: DenseField) -> Coloring:
    """The coloring declared for ``field``.

    Raises:
        ValueError: the map has no coloring, or an unknown coloring name.
    """
    coloring = field.coloring
    if coloring is None:
        raise ValueError(f'No coloring for {field.pred!r}.')
    if isinstance(coloring, str):
        if coloring not in COLORINGS:
            raise ValueError(f'Map {field.name!r} names coloring '
                             f'{coloring!r}; known: {sorted(COLORINGS)}.')
        return COLORINGS[coloring]
    return coloring


def color_dense_field(name: str, value: np.ndarray, image: np.ndarray,
                      foreground: Optional[np.ndarray] = None,
                      background: str = 'color',
                      rounding: str = 'truncate',
                      bounds: Optional[Tuple[float, float]] = None
                      ) -> np.ndarray:
    """(H, W, 3) uint8 BGR colors of one dense map (``pred_normal``,
    ``pred_depth``, ``pred_albedo`` or another declared map), background
    masked (module docstring). ``bounds``: the value bounds (default from
    the foreground).

    Raises:
        ValueError: an undeclared map or one without a coloring.
    """
    field = dense_field(name)
    if field is None:
        raise ValueError(f'No coloring for {name!r}.')
    coloring = coloring_of(field)
    value = field.as_map(value)
    if bounds is None:
        bounds = coloring.bounds(value, foreground)
    drawing = coloring.colors(value, rounding, bounds)
    return mask_background(drawing, foreground, image, coloring.background,
                           background)


def _masked(drawing: np.ndarray, mask: Optional[np.ndarray]) -> np.ndarray:
    """Black outside ``mask`` (H, W) of the top ``H`` rows of ``drawing``."""
    if mask is None:
        return drawing
    out = drawing.copy()
    out[:mask.shape[0]][~mask] = 0
    return out


def draw_dense_prediction(image: np.ndarray, fields: dict,
                          gt_fields: Optional[dict] = None,
                          gt_mask: Optional[np.ndarray] = None,
                          foreground: Optional[np.ndarray] = None,
                          background: str = 'color',
                          rounding: str = 'truncate') -> np.ndarray:
    """``[image | prediction]``, or ``[image | prediction | ground truth]``
    when ``gt_fields`` holds the matching target, for the first declared map
    with a coloring that ``fields`` holds (``pred_normal``, ``pred_depth``,
    ``pred_albedo``, then the maps of other declared tasks).

    Normals get the color key under them, depth its color bar (prediction
    and ground truth share the ground truth's bounds, so equal colors are
    equal depths). With ground truth the panels are titled and the ground
    truth is black outside ``gt_mask``.

    Args:
        image: (H, W, 3) uint8 BGR input.
        fields: name -> (H, W, C) float array (channels last).
        gt_fields: ``gt_<name>`` -> (H, W, C) float arrays at the image size
            (only the drawn map's is used).
        gt_mask: (H, W) bool valid ground-truth pixels.
        foreground: (H, W) bool foreground of the prediction, or None (whole
            frame); depth bounds then come from the foreground.
        background: ``'color'`` (the official flat colors) or ``'photo'``
            outside the foreground.
        rounding: see :func:`to_uint8`.

    Raises:
        ValueError: no drawable map is given.
    """
    gt_fields = gt_fields or {}
    drawable = [f for f in dense_fields() if f.coloring is not None]
    field = next((f for f in drawable if fields.get(f.pred) is not None),
                 None)
    if field is None:
        expected = ', '.join(f.pred for f in drawable)
        raise ValueError(
            f'No dense prediction to draw; got fields {sorted(fields)}, '
            f'expected one of {expected}.')
    gt = gt_fields.get(field.gt)
    gt = None if gt is None else field.as_map(gt)

    def color(value, bounds):
        return color_dense_field(field.pred, value, image, foreground,
                                 background, rounding, bounds)

    pred, gt = coloring_of(field).panels(
        color, field.as_map(fields[field.pred]), gt, gt_mask,
        foreground, rounding)
    if gt is None:
        return side_by_side(image, pred)
    return side_by_side(titled(image, 'input'), titled(pred, 'prediction'),
                        titled(gt, 'ground truth'))
