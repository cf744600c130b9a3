"""Transforms shared by every task."""
from .interpolation import resize_interpolation, warp_interpolation
from .loading import Sapiens2LoadImage
from .lookup import apply_uint8_table
from .photometric import PhotoMetricDistortionLUT, PosePhotometricDistortionLUT

__all__ = [
    'PhotoMetricDistortionLUT', 'PosePhotometricDistortionLUT',
    'Sapiens2LoadImage', 'apply_uint8_table', 'resize_interpolation',
    'warp_interpolation'
]
