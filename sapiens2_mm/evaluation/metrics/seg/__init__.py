"""Segmentation metrics (imports mmseg)."""
from .seg_iou_metric import SegIoUMetric

__all__ = ['SegIoUMetric']
