"""Pose transforms that differ from mmpose's in the official pipeline."""
from .image_augment import RandomBlur, RandomCoarseDropout
from .topdown_affine import Sapiens2TopdownAffine, Sapiens2TopdownCropSource

__all__ = [
    'RandomBlur', 'RandomCoarseDropout',
    'Sapiens2TopdownAffine', 'Sapiens2TopdownCropSource'
]
