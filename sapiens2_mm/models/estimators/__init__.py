"""Model wrappers where the mmpose/mmseg classes do not fit (imports mmseg)."""
from .seg_flip_tta import SegFlipTTAModel, swap_channels

__all__ = ['SegFlipTTAModel', 'swap_channels']
