"""Per-value functions of uint8 images applied as 256-entry tables."""
import cv2
import numpy as np

# The 256 values of a uint8 pixel: a per-value function applied to them is
# its lookup table.
UINT8_VALUES = np.arange(256, dtype=np.uint8)


def apply_uint8_table(img: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[img]`` for a uint8 image, with ``cv2.LUT`` where it keeps the
    shape (2-D, or 2 to 4 channels).

    Args:
        img: (H, W) or (H, W, C) uint8 (any strides).
        table: (256,) uint8, the same for every channel, or (256, 1, C)
            uint8, one column per channel (cv2 shapes only).

    Returns:
        np.ndarray: a new uint8 array of ``img``'s shape.
    """
    if img.ndim == 2 or (img.ndim == 3 and 2 <= img.shape[2] <= 4):
        return cv2.LUT(np.ascontiguousarray(img), table)
    return np.take(table.reshape(256), img)
