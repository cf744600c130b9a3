"""Model wrappers where the mmpose/mmseg classes do not fit (imports mmseg)."""
from .dense_estimator import DenseEstimator
from .seg_flip_tta import SegFlipTTAModel, merge_flip_views, swap_channels

__all__ = [
    'DenseEstimator', 'SegFlipTTAModel', 'merge_flip_views', 'swap_channels'
]
