"""Segmentation dataset and transforms (imports mmseg)."""
from .seg_dataset import Seg29Dataset, SegDataset
from .transforms import *  # noqa: F401,F403

__all__ = ['SegDataset', 'Seg29Dataset']
