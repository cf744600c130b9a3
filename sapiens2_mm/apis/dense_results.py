"""The inference result of the dense tasks (normal, pointmap, albedo)."""
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np


@dataclass
class DenseResult:
    """Dense predictions of one frame at its original resolution.

    Only the fields of the model's task are set.

    Attributes:
        name: frame name (see :class:`~sapiens2_mm.apis.inputs.Frame`).
        image_size: (H, W) of the frame.
        normal: (H, W, 3) float32 unit normals, camera frame (x right, y
            down, z forward).
        pointmap: (H, W, 3) float32 metric points (metres), camera frame.
        depth: (H, W) float32 metric depth (the pointmap's z).
        albedo: (H, W, 3) float32 RGB albedo in [0, 1].
        scale: the predicted canonical scale s = 768 / fx.
        focal_length: the estimated focal length of the frame in pixels,
            768 / (s * r) with r the letterbox resize factor.
        video / frame_index: where the frame came from, for videos.
        foreground: (H, W) bool foreground mask, or None (whole frame); it
            affects drawings and point clouds only, never the arrays.
        foreground_source: ``'seg_dir'``, ``'fg_seg'``, ``'missing'`` (a
            mask folder without this frame's mask) or None (no masks asked).
    """
    name: str
    image_size: Tuple[int, int]
    normal: Optional[np.ndarray] = None
    pointmap: Optional[np.ndarray] = None
    depth: Optional[np.ndarray] = None
    albedo: Optional[np.ndarray] = None
    scale: Optional[float] = None
    focal_length: Optional[float] = None
    video: Optional[str] = None
    frame_index: Optional[int] = None
    foreground: Optional[np.ndarray] = None
    foreground_source: Optional[str] = None
