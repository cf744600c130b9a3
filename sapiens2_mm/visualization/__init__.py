"""Drawing helpers for inference outputs (skeletons, label overlays)."""
from .pose_drawer import draw_pose
from .seg_drawer import colorize_labels, overlay_labels, seg_side_by_side

__all__ = ['draw_pose', 'colorize_labels', 'overlay_labels',
           'seg_side_by_side']
