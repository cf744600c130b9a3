"""Segmentation heads (imports mmseg)."""
from .seg_head import SegHead

__all__ = ['SegHead']
