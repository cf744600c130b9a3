"""Transforms shared by every task."""
from .interpolation import resize_interpolation, warp_interpolation
from .loading import Sapiens2LoadImage
from .photometric import PhotoMetricDistortionLUT, PosePhotometricDistortionLUT

__all__ = [
    'PhotoMetricDistortionLUT', 'PosePhotometricDistortionLUT',
    'Sapiens2LoadImage', 'resize_interpolation', 'warp_interpolation'
]
