"""Pose heads (mmpose heads; importing this imports mmpose)."""
from ....codecs import Sapiens2UDPHeatmap  # noqa: F401 - registers the codec
from .pose_heatmap_head import PoseHeatmapHead

__all__ = ['PoseHeatmapHead']
