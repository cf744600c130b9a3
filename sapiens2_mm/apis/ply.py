"""Write and read colored point clouds as PLY files.

The files are ``binary_little_endian 1.0`` with one ``vertex`` element of
``float x, y, z`` (metres, OpenCV camera frame: x right, y down, z forward)
and ``uchar red, green, blue``; no faces, and (unlike the official demo) no
marker sphere at the camera origin. Any PLY reader (Open3D, MeshLab,
CloudCompare, trimesh) opens them.
"""
from typing import Optional

import numpy as np

from ..utils.atomic_file import atomic_open

VERTEX_DTYPE = np.dtype([('x', '<f4'), ('y', '<f4'), ('z', '<f4'),
                         ('red', 'u1'), ('green', 'u1'), ('blue', 'u1')])


def ply_header(num_points: int) -> bytes:
    """The header of a binary PLY with ``num_points`` colored vertices."""
    return ('ply\n'
            'format binary_little_endian 1.0\n'
            'comment sapiens2_mm pointmap, metres, OpenCV camera frame\n'
            f'element vertex {num_points}\n'
            'property float x\nproperty float y\nproperty float z\n'
            'property uchar red\nproperty uchar green\nproperty uchar blue\n'
            'end_header\n').encode('ascii')


def write_ply(path: str, points: np.ndarray, colors_rgb: np.ndarray) -> str:
    """Write (N, 3) points and (N, 3) uint8 RGB colors atomically.

    Raises:
        ValueError: mismatched or mis-shaped arrays.
    """
    points = np.asarray(points)
    colors_rgb = np.asarray(colors_rgb)
    if points.ndim != 2 or points.shape[1] != 3 or \
            colors_rgb.shape != points.shape:
        raise ValueError(
            f'write_ply needs (N, 3) points and (N, 3) colors, got '
            f'{points.shape} and {colors_rgb.shape}.')
    vertices = np.empty(len(points), VERTEX_DTYPE)
    for i, axis in enumerate('xyz'):
        vertices[axis] = points[:, i]
    for i, channel in enumerate(('red', 'green', 'blue')):
        vertices[channel] = colors_rgb[:, i]
    with atomic_open(path, fsync=False) as f:
        f.write(ply_header(len(points)))
        f.write(vertices.tobytes())
    return path


def pointmap_to_cloud(pointmap: np.ndarray, image_bgr: np.ndarray,
                      step: int = 1, foreground: Optional[np.ndarray] = None):
    """Points and RGB colors of every ``step``-th pixel with a finite point
    in front of the camera (z > 0), in the foreground when a mask is given.

    Args:
        pointmap: (H, W, 3) metric points.
        image_bgr: (H, W, 3) uint8 image of the same size.
        step: keep every step-th row and column.
        foreground: (H, W) bool mask, or None (every pixel).

    Returns:
        ``(points (N, 3) float32, colors (N, 3) uint8 RGB)``.
    """
    if step < 1:
        raise ValueError(f'The point cloud step must be >= 1, got {step}.')
    pts = pointmap[::step, ::step].reshape(-1, 3)
    rgb = image_bgr[::step, ::step, ::-1].reshape(-1, 3)
    keep = np.isfinite(pts).all(1) & (pts[:, 2] > 0)
    if foreground is not None:
        keep &= foreground[::step, ::step].reshape(-1)
    return pts[keep].astype(np.float32), np.ascontiguousarray(rgb[keep])
