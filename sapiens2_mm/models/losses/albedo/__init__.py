"""Albedo losses: ``MaskedL1Loss`` x2 + gradient x2 + chromaticity x1."""
from .chromaticity import AlbedoChromaticityL1Loss, chromaticity
from .gradient_mse import AlbedoGradL1Loss

__all__ = ['AlbedoChromaticityL1Loss', 'AlbedoGradL1Loss', 'chromaticity']
