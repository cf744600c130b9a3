"""Segmentation dataset and transforms (imports mmseg)."""
from .seg29_dataset import Seg29Dataset
from .transforms import *  # noqa: F401,F403

__all__ = ['Seg29Dataset']
