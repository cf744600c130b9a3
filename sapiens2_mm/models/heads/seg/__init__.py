"""Segmentation head (imports mmseg)."""
from .seg_head import SegHead

__all__ = ['SegHead']
