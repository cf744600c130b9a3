"""Palette overlay of a label map (as the official seg demo draws it).

A blend and a table look-up; mmseg's ``SegLocalVisualizer`` needs a
``SegDataSample`` and a matplotlib canvas for the same result.

Both have a fast path that gives the same bytes: uint8 labels go through
``cv2.LUT`` (7x faster than indexing with int64 labels), and the 50 % blend
of the official demo through ``cv2.addWeighted``. At opacity 0.5 every
product is exact and the sum is an integer or an exact half, which both
round half to even, so the result equals the float32 formula (also checked
on all 65,536 value pairs in tests/test_visualization); other opacities keep
the float32 formula, whose roundings OpenCV's fused multiply-adds may not
repeat. A 12 MP side-by-side: 279 ms before, 48 ms now (2 cores).
"""
import cv2
import numpy as np


def _bgr_table(palette, size: int) -> np.ndarray:
    """(size, 3) uint8 BGR colors of ``palette`` (RGB), black beyond it."""
    table = np.zeros((size, 3), np.uint8)
    rgb = np.asarray(palette, dtype=np.uint8).reshape(-1, 3)
    table[:len(rgb)] = rgb[:, ::-1]
    return table


def colorize_labels(label_map: np.ndarray, palette) -> np.ndarray:
    """(H, W) class indices -> (H, W, 3) uint8 BGR colors.

    Args:
        label_map: integer labels in ``[0, len(palette))``; others are black.
        palette: (C, 3) RGB colors (the metainfo convention).
    """
    labels = np.asarray(label_map)
    num_colors = len(np.asarray(palette).reshape(-1, 3))
    if labels.dtype == np.uint8 and labels.ndim == 2 and num_colors <= 256:
        table = _bgr_table(palette, 256).reshape(256, 1, 3)
        return cv2.LUT(cv2.merge([labels, labels, labels]), table)
    table = _bgr_table(palette, num_colors + 1)  # the last entry is black
    inside = (labels >= 0) & (labels < num_colors)
    return table[np.where(inside, labels, num_colors).astype(np.int64)]


def blend(image: np.ndarray, colors: np.ndarray,
          opacity: float) -> np.ndarray:
    """``round((1 - opacity) * image + opacity * colors)`` as uint8, with
    float32 arithmetic (``cv2.addWeighted`` where that is provably equal)."""
    if opacity in (0.0, 0.5, 1.0):
        return cv2.addWeighted(image, 1 - opacity, colors, opacity, 0)
    out = (1 - opacity) * image.astype(np.float32) + opacity * colors.astype(
        np.float32)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def overlay_labels(image: np.ndarray, label_map: np.ndarray, palette,
                   opacity: float = 0.5) -> np.ndarray:
    """``(1 - opacity) * image + opacity * colors``, uint8 BGR (H, W, 3)."""
    if label_map.shape != image.shape[:2]:
        raise ValueError(
            f'label map {label_map.shape} and image {image.shape[:2]} sizes '
            'differ; predict at the original resolution.')
    return blend(image, colorize_labels(label_map, palette), opacity)


def seg_side_by_side(image: np.ndarray, label_map: np.ndarray, palette,
                     opacity: float = 0.5) -> np.ndarray:
    """[image | overlay] as written by the official seg demo."""
    return np.concatenate(
        [image, overlay_labels(image, label_map, palette, opacity)], axis=1)
