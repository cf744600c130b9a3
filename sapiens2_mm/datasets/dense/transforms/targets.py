"""Training targets: unit normals and the canonical pointmap."""
from typing import Optional

import numpy as np
from mmcv.transforms import BaseTransform

from sapiens2_mm.registry import TRANSFORMS


@TRANSFORMS.register_module()
class NormalGenerateTarget(BaseTransform):
    """Re-normalize ``gt_normal`` to unit length inside ``gt_mask`` and set
    the other pixels to ``background_value`` (official
    ``NormalGenerateTarget``, -1000; None keeps them).

    Nearest-neighbour resizes keep unit normals, but zero-padded or
    bilinearly mixed pixels would not be.
    """

    def __init__(self, background_value: Optional[float] = -1000.0) -> None:
        self.background_value = background_value

    def transform(self, results: dict) -> dict:
        normal = results.get('gt_normal')
        if normal is None:
            return results
        mask = results['gt_mask']
        norm = np.linalg.norm(normal, axis=2, keepdims=True)
        ok = mask[..., None] & (norm > 1e-6)
        out = np.where(ok, normal / np.where(norm > 1e-6, norm, 1.0), normal)
        if self.background_value is not None:
            out = np.where(mask[..., None], out, self.background_value)
        results['gt_normal'] = out.astype(np.float32)
        results['gt_mask'] = mask & ok[..., 0]
        return results


@TRANSFORMS.register_module()
class PointmapGenerateTarget(BaseTransform):
    """Back-project ``gt_depth`` into the canonical pointmap (official
    ``PointmapGenerateTarget``).

    With the targets' intrinsics ``gt_cam_K`` (fx, fy, cx, cy) and pixel
    (u, v) = (column, row): ``X = (u - cx) Z / fx``, ``Y = (v - cy) Z / fy``.
    ``canonical_scale = canonical_focal_length / fx`` with fx of ``cam_K``,
    the intrinsics of the network input (equal to ``gt_cam_K`` in training;
    at test time the targets keep the original size while the image is
    letterboxed). ``gt_pointmap = canonical_scale * [X, Y, Z]``, 0 outside
    the mask. ``gt_depth`` stays metric (invalid pixels 0) and ``cam_K``
    stays pre-canonical (the official ``original_K``); the official key
    ``scale`` is ``canonical_scale`` here (``scale`` is mmcv Resize's).
    ``gt_mean_depth`` is the mean canonical Z over the mask (0 if empty).

    Args:
        canonical_focal_length: focal length of the canonical camera (768).
    """

    def __init__(self, canonical_focal_length: float = 768.0) -> None:
        self.canonical_focal_length = canonical_focal_length

    def transform(self, results: dict) -> dict:
        depth = results.get('gt_depth')
        if depth is None:
            return results
        if results.get('cam_K') is None:
            raise ValueError(
                f'Sample {results.get("img_path")} has depth but no '
                'intrinsics cam_K; the pointmap dataset needs '
                'camera_intrinsics/<name>.txt for every image.')
        K_gt = results.get('gt_cam_K', results['cam_K'])
        mask = results['gt_mask']
        h, w = depth.shape
        v, u = np.mgrid[0:h, 0:w].astype(np.float64)
        fx, fy, cx, cy = K_gt[0, 0], K_gt[1, 1], K_gt[0, 2], K_gt[1, 2]
        skew = K_gt[0, 1]
        y = (v - cy) / fy
        x = (u - cx - skew * y) / fx
        scale = self.canonical_focal_length / float(results['cam_K'][0, 0])
        points = np.stack([x * depth, y * depth, depth.astype(np.float64)],
                          axis=-1) * scale
        points[~mask] = 0.0
        results['gt_pointmap'] = points.astype(np.float32)
        results['gt_depth'] = np.where(mask, depth, 0.0).astype(np.float32)
        results['canonical_scale'] = scale
        results['gt_mean_depth'] = float(points[mask, 2].mean()) \
            if mask.any() else 0.0
        return results
