"""Keys drawn under the drawings: seg class names and colors, the normal
color code, and panel titles.

Every function returns (h, W, 3) uint8 **BGR** strips whose height depends
only on the width (and the class list), so every frame of a video gets the
same drawing size. Text is OpenCV's Hershey font, scaled with the width so a
4000-pixel drawing stays legible.
"""
from typing import Optional, Sequence

import cv2
import numpy as np

from .colors import LEGEND_HEIGHT, normal_to_bgr

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE, GREY, BLACK = (255, 255, 255), (110, 110, 110), (0, 0, 0)


def text_scale(width: int) -> float:
    """Font scale for a drawing ``width`` pixels wide (0.4 at <= 900 px,
    growing linearly, 2.0 at 4500 px)."""
    return float(np.clip(width / 2250.0, 0.4, 2.0))


def _put(canvas: np.ndarray, text: str, x: int, y: int, scale: float,
         color=WHITE) -> None:
    """Text with a black outline (legible on any color)."""
    thick = max(1, int(round(scale * 2)))
    cv2.putText(canvas, text, (x, y), FONT, scale, BLACK, thick + 2,
                cv2.LINE_AA)
    cv2.putText(canvas, text, (x, y), FONT, scale, color, thick, cv2.LINE_AA)


def class_legend(width: int, classes: Sequence[str], palette,
                 present: Optional[Sequence[int]] = None) -> np.ndarray:
    """(h, width, 3) key of every class: a swatch of its palette color and
    its name, in index order, row by row (``h`` depends only on ``width`` and
    the names).

    Args:
        width: strip width in pixels.
        classes: class names (K).
        palette: (K, 3) RGB colors (the metainfo convention).
        present: class indices in the drawing; the names of the others are
            drawn in grey (all white when None).

    Returns:
        (h, width, 3) uint8 BGR.
    """
    colors = np.asarray(palette, dtype=np.int64).reshape(-1, 3)
    scale = text_scale(width)
    (_, text_h), base = cv2.getTextSize('Ag', FONT, scale, 1)
    row_h = text_h + base + int(8 * scale / 0.4)
    swatch = text_h + base
    name_w = max(cv2.getTextSize(str(c), FONT, scale, 1)[0][0]
                 for c in classes)
    cell_w = swatch + int(6 * scale / 0.4) + name_w + int(14 * scale / 0.4)
    cols = max(1, width // cell_w)
    rows = -(-len(classes) // cols)
    strip = np.zeros((rows * row_h + 4, width, 3), np.uint8)
    shown = None if present is None else {int(i) for i in present}
    for i, name in enumerate(classes):
        row, col = divmod(i, cols)
        x, y = col * cell_w + 4, row * row_h + 4
        r, g, b = (int(v) for v in colors[i]) if i < len(colors) else (0, 0,
                                                                         0)
        cv2.rectangle(strip, (x, y), (x + swatch, y + swatch), (b, g, r), -1)
        color = WHITE if shown is None or i in shown else GREY
        cv2.putText(strip, str(name), (x + swatch + int(6 * scale / 0.4),
                                       y + text_h), FONT, scale, color,
                    1, cv2.LINE_AA)
    return strip


def normal_key(width: int, height: int = LEGEND_HEIGHT) -> np.ndarray:
    """(height, width, 3) key of the normal colors: a sphere as seen by
    the camera, colored like the normals (``(n + 1) / 2``, x -> red,
    y -> green, z -> blue; OpenCV camera frame, so the visible side has
    ``n_z < 0``), and the axes written out."""
    strip = np.zeros((height, width, 3), np.uint8)
    radius = (height - 4) / 2.0
    size = int(2 * radius) + 1
    v, u = np.mgrid[0:size, 0:size].astype(np.float64)
    x, y = (u - radius) / radius, (v - radius) / radius
    inside = x * x + y * y <= 1.0
    z = -np.sqrt(np.clip(1.0 - x * x - y * y, 0.0, 1.0))
    disc = normal_to_bgr(np.stack([x, y, z], axis=-1).astype(np.float32))
    if width < size + 8:
        return strip
    top = (height - size) // 2
    region = strip[top:top + size, 4:4 + size]
    region[inside] = disc[inside]
    text = 'red = x right, green = y down, blue = z forward'
    room = width - size - 14
    scale = min(text_scale(width), 0.45 * height / LEGEND_HEIGHT)
    while scale > 0.25 and cv2.getTextSize(text, FONT, scale, 1)[0][0] > room:
        scale *= 0.9
    if cv2.getTextSize(text, FONT, scale, 1)[0][0] > room:
        text = 'R=x G=y B=z'
    _put(strip, text, size + 10, int(height * 0.7), scale)
    return strip


def titled(panel: np.ndarray, title: str) -> np.ndarray:
    """A copy of ``panel`` with ``title`` in its top-left corner."""
    out = panel.copy()
    scale = text_scale(out.shape[1] * 2)
    (_, text_h), _ = cv2.getTextSize(title, FONT, scale, 1)
    _put(out, title, 4, text_h + 4, scale)
    return out
