"""Segmentation head and flip test (imports mmseg)."""
from .flip_tta import SegFlipTTAModel, swap_channels
from .seg_head import SegHead

__all__ = ['SegHead', 'SegFlipTTAModel', 'swap_channels']
