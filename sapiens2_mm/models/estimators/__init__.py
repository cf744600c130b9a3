"""Model wrappers where the mmpose/mmseg classes do not fit (imports mmseg)."""
from .dense_estimator import DenseEstimator
from .seg_flip_tta import SegFlipTTAModel, swap_channels

__all__ = ['DenseEstimator', 'SegFlipTTAModel', 'swap_channels']
