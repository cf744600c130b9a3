"""Transforms shared by every task."""
from .interpolation import resize_interpolation, warp_interpolation
from .loading import Sapiens2LoadImage

__all__ = ['Sapiens2LoadImage', 'resize_interpolation', 'warp_interpolation']
