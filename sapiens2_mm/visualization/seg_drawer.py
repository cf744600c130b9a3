"""Palette overlay of a label map (as the official seg demo draws it).

A blend and a table look-up; mmseg's ``SegLocalVisualizer`` needs a
``SegDataSample`` and a matplotlib canvas for the same result.
"""
import numpy as np


def colorize_labels(label_map: np.ndarray, palette) -> np.ndarray:
    """(H, W) class indices -> (H, W, 3) uint8 BGR colours.

    Args:
        label_map: integer labels in ``[0, len(palette))``; others are black.
        palette: (C, 3) RGB colours (the metainfo convention).
    """
    table = np.zeros((256, 3), np.uint8)
    rgb = np.asarray(palette, dtype=np.uint8).reshape(-1, 3)
    table[:len(rgb)] = rgb[:, ::-1]
    labels = np.asarray(label_map)
    inside = (labels >= 0) & (labels < len(rgb))
    return table[np.where(inside, labels, 255).astype(np.int64)]


def overlay_labels(image: np.ndarray, label_map: np.ndarray, palette,
                   opacity: float = 0.5) -> np.ndarray:
    """``(1 - opacity) * image + opacity * colours``, uint8 BGR (H, W, 3)."""
    if label_map.shape != image.shape[:2]:
        raise ValueError(
            f'label map {label_map.shape} and image {image.shape[:2]} sizes '
            'differ; predict at the original resolution.')
    colors = colorize_labels(label_map, palette).astype(np.float32)
    out = (1 - opacity) * image.astype(np.float32) + opacity * colors
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def seg_side_by_side(image: np.ndarray, label_map: np.ndarray, palette,
                     opacity: float = 0.5) -> np.ndarray:
    """[image | overlay] as written by the official seg demo."""
    return np.concatenate(
        [image, overlay_labels(image, label_map, palette, opacity)], axis=1)
