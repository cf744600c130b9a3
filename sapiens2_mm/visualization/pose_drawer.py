"""Draw keypoints and skeletons with the colors of the dataset metainfo.

Small cv2 code rather than mmpose's ``PoseLocalVisualizer``: that one draws
through a matplotlib canvas, one primitive at a time, which is slow for 308
keypoints over video frames; the geometry and colors here are the same
(metainfo colors are RGB, the canvas is BGR).
"""
from typing import Optional

import cv2
import numpy as np


def _bgr(color) -> tuple:
    r, g, b = (int(c) for c in color)
    return (b, g, r)


def draw_pose(image: np.ndarray, keypoints: np.ndarray,
              scores: np.ndarray, meta: dict,
              bboxes: Optional[np.ndarray] = None, kpt_thr: float = 0.3,
              radius: int = 3, thickness: int = 1) -> np.ndarray:
    """Overlay skeletons on a copy of ``image``.

    Args:
        image: (H, W, 3) uint8 BGR.
        keypoints: (N, K, 2) image pixels.
        scores: (N, K); only keypoints (and links between two of them) with
            score > ``kpt_thr`` are drawn.
        meta: dataset metainfo with ``keypoint_colors`` (K, 3) RGB and
            optionally ``skeleton_links`` / ``skeleton_link_colors``.
        bboxes: (N, 4) ``x1, y1, x2, y2`` drawn in green, if given.
        kpt_thr / radius / thickness: drawing settings (official demo: 0.3,
            radius 8, thickness 8 at 1024 px).

    Returns:
        (H, W, 3) uint8 BGR drawing.
    """
    canvas = image.copy()
    kpt_colors = np.asarray(meta['keypoint_colors']).reshape(-1, 3)
    links = meta.get('skeleton_links') or []
    link_colors = np.asarray(
        meta.get('skeleton_link_colors', [])).reshape(-1, 3)
    if bboxes is not None:
        for box in np.asarray(bboxes).reshape(-1, 4):
            x1, y1, x2, y2 = (int(round(v)) for v in box)
            cv2.rectangle(canvas, (x1, y1), (x2, y2), (0, 255, 0), thickness)
    for kpts, kscores in zip(np.asarray(keypoints), np.asarray(scores)):
        visible = kscores > kpt_thr
        for i, (a, b) in enumerate(links):
            if visible[a] and visible[b]:
                color = link_colors[i] if i < len(link_colors) else (0, 255, 0)
                pa = tuple(int(round(v)) for v in kpts[a])
                pb = tuple(int(round(v)) for v in kpts[b])
                cv2.line(canvas, pa, pb, _bgr(color), thickness,
                         cv2.LINE_AA)
        for k in np.flatnonzero(visible):
            center = tuple(int(round(v)) for v in kpts[k])
            cv2.circle(canvas, center, radius, _bgr(kpt_colors[k]), -1,
                       cv2.LINE_AA)
    return canvas
