"""Pose metrics: COCO OKS AP/AR for any keypoint layout and the 308 layout."""
from .coco_keypoint_eval import STAT_NAMES, coco_keypoint_eval
from .keypoint_oks_metric import KeypointOKSMetric
from .keypoints308_metric import Keypoints308Metric, load_keypoints308_info
from .oks import instance_scores, oks_nms

__all__ = [
    'KeypointOKSMetric', 'Keypoints308Metric', 'coco_keypoint_eval',
    'STAT_NAMES', 'instance_scores', 'oks_nms', 'load_keypoints308_info'
]
