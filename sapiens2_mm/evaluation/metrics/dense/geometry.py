"""Angles between normals and Sobel normals of pointmaps (float32 like the
official evaluators, so threshold counts agree pixel for pixel)."""
import math
from typing import Optional

import cv2
import numpy as np
import torch

_RAD_TO_DEG = 180.0 / math.pi


def unit_vectors(vectors: torch.Tensor, dim: int, eps: float = 1e-6
                 ) -> torch.Tensor:
    """``v / max(||v||, eps)`` along ``dim`` (the official normalization)."""
    return vectors / vectors.norm(dim=dim, keepdim=True).clamp_min(eps)


def angles_deg(pred: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
    """Angle in degrees between unit vectors, (N, 3) x (N, 3) -> (N,).

    The dot product is clamped to [-1, 1] before ``acos``.
    """
    dot = (gt * pred).sum(dim=1).clamp(-1.0, 1.0)
    return torch.acos(dot) * _RAD_TO_DEG


def sobel_normals(pointmap: torch.Tensor,
                  valid: Optional[np.ndarray] = None) -> np.ndarray:
    """Surface normals of a whole (H, W, 3) pointmap, float32.

    ``n = cross(Gx, Gy) / (||cross(Gx, Gy)|| + 1e-6)`` with ``Gx``, ``Gy`` the
    5x5 Sobel derivatives of each coordinate (``cv2.Sobel``, default border
    ``BORDER_REFLECT_101``), computed over the full map: the zeroed invalid
    pixels take part, as in the official pointmap evaluator. Rows grow
    downwards and columns to the right, so in the OpenCV camera frame the
    normals of a camera-facing surface point away from the camera.

    Args:
        pointmap: (H, W, 3) points.
        valid: optional (H, W) bool; then only those pixels' normals are
            formed (the derivatives still see the full map).

    Returns:
        (H, W, 3) normals, or (N, 3) at the ``valid`` pixels.
    """
    points = np.ascontiguousarray(
        pointmap.detach().cpu().numpy().astype(np.float32))
    grad_x = cv2.Sobel(points, cv2.CV_32F, 1, 0, ksize=5)
    grad_y = cv2.Sobel(points, cv2.CV_32F, 0, 1, ksize=5)
    if valid is not None:
        grad_x, grad_y = grad_x[valid], grad_y[valid]
    normals = np.cross(grad_x, grad_y)
    return normals / (np.linalg.norm(normals, axis=-1, keepdims=True) + 1e-6)
