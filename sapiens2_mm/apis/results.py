"""Structured inference results: pose, seg and the dense tasks (normal,
pointmap, albedo and any other declared dense task)."""
import math
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np

from ..structures import dense_field


@dataclass
class PoseResult:
    """Top-down pose of every person in one frame, in image pixels.

    Attributes:
        name: frame name (see :class:`~sapiens2_mm.apis.inputs.Frame`).
        image_size: (H, W) of the frame.
        bboxes: (N, 4) float32 person boxes ``x1, y1, x2, y2``.
        bbox_scores: (N,) detector scores (1 for given or whole-image boxes).
        keypoints: (N, K, 2) float32 keypoint ``x, y`` in image pixels.
        keypoint_scores: (N, K) float32 heatmap maxima.
        video / frame_index: where the frame came from, for videos.
    """
    name: str
    image_size: Tuple[int, int]
    bboxes: np.ndarray
    bbox_scores: np.ndarray
    keypoints: np.ndarray
    keypoint_scores: np.ndarray
    video: Optional[str] = None
    frame_index: Optional[int] = None

    def to_dict(self) -> dict:
        """The frame entry of the keypoint JSON (docs/inference.md).

        Non-finite numbers (a keypoint decoded from a degenerate crop) are
        written as ``null``, so the file stays valid JSON.
        """
        entry = dict(
            image_name=self.name,
            image_size=list(self.image_size),
            instances=[
                dict(bbox=_finite_list(box),
                     bbox_score=_finite(score),
                     keypoints=[_finite_list(k) for k in kpts],
                     keypoint_scores=_finite_list(kscores))
                for box, score, kpts, kscores in zip(
                    self.bboxes, self.bbox_scores, self.keypoints,
                    self.keypoint_scores)
            ])
        if self.video is not None:
            entry.update(video=self.video, frame_index=self.frame_index)
        return entry


def _finite(value) -> Optional[float]:
    value = float(value)
    return value if math.isfinite(value) else None


def _finite_list(values) -> list:
    return [_finite(v) for v in values]


@dataclass
class SegResult:
    """Body-part labels of one frame at its original resolution.

    Attributes:
        name: frame name.
        label_map: (H, W) class indices, uint8 (uint16 above 256 classes).
        video / frame_index: where the frame came from, for videos.
    """
    name: str
    label_map: np.ndarray
    video: Optional[str] = None
    frame_index: Optional[int] = None


@dataclass
class DenseResult:
    """Dense predictions of one frame at its original resolution.

    The maps are those its task declares
    (:mod:`sapiens2_mm.structures.dense_outputs`); each declared map is also
    an attribute, None when the frame's task does not predict it:

    * ``normal``: (H, W, 3) float32 unit normals, camera frame (x right, y
      down, z forward).
    * ``pointmap``: (H, W, 3) float32 metric points (metres), camera frame.
    * ``depth``: (H, W) float32 metric depth (the pointmap's z).
    * ``albedo``: (H, W, 3) float32 RGB albedo in [0, 1].

    Attributes:
        name: frame name (see :class:`~sapiens2_mm.apis.inputs.Frame`).
        image_size: (H, W) of the frame.
        maps: map name -> (H, W, C) float32 array, (H, W) for one channel.
        scale: the predicted canonical scale s = 768 / fx (pointmap).
        focal_length: the estimated focal length of the frame in pixels,
            768 / (s * r) with r the letterbox resize factor (pointmap).
        video / frame_index: where the frame came from, for videos.
        foreground: (H, W) bool foreground mask, or None (whole frame); it
            affects drawings and point clouds only, never the arrays.
        foreground_source: ``'seg_dir'``, ``'fg_seg'``, ``'missing'`` (a
            mask folder without this frame's mask) or None (no masks asked).
    """
    name: str
    image_size: Tuple[int, int]
    maps: Dict[str, np.ndarray] = field(default_factory=dict)
    scale: Optional[float] = None
    focal_length: Optional[float] = None
    video: Optional[str] = None
    frame_index: Optional[int] = None
    foreground: Optional[np.ndarray] = None
    foreground_source: Optional[str] = None

    def __getattr__(self, name: str):
        # only reached for names that are not fields: declared maps
        if not name.startswith('_') and name != 'maps' and \
                dense_field(name) is not None:
            return self.maps.get(name)
        raise AttributeError(f'{type(self).__name__} has no attribute '
                             f'{name!r} (maps: {sorted(self.maps)}).')
