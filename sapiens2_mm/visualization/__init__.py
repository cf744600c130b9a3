"""Drawing helpers for inference outputs (skeletons, label overlays)."""
from .dense_drawer import (
    albedo_to_bgr,
    color_dense_field,
    depth_range,
    depth_to_bgr,
    draw_dense_prediction,
    normal_to_bgr,
)
from .pose_drawer import draw_pose
from .seg_drawer import colorize_labels, overlay_labels, seg_side_by_side

__all__ = ['draw_pose', 'colorize_labels', 'overlay_labels',
           'seg_side_by_side', 'albedo_to_bgr', 'depth_range', 'depth_to_bgr',
           'draw_dense_prediction', 'normal_to_bgr', 'color_dense_field']
