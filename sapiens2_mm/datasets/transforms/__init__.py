"""Transforms shared by every task."""
from .loading import Sapiens2LoadImage

__all__ = ['Sapiens2LoadImage']
