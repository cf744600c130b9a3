"""Transforms of the dense tasks (normal, pointmap, albedo)."""
from .formatting import PackDenseInputs
from .geometric import (
                        DenseRandomCropContinuous,
                        DenseRandomFlip,
                        DenseRandomScale,
                        DenseResizePad,
                        DenseToOutputSize,
)
from .loading import DenseFileError, LoadDenseAnnotations
from .photometric import RandomDownUpSample, RandomSolarize
from .targets import NormalGenerateTarget, PointmapGenerateTarget

__all__ = [
    'PackDenseInputs', 'DenseRandomCropContinuous', 'DenseRandomFlip',
    'DenseRandomScale', 'DenseResizePad', 'DenseToOutputSize', 'DenseFileError',
    'LoadDenseAnnotations', 'RandomDownUpSample', 'RandomSolarize',
    'NormalGenerateTarget', 'PointmapGenerateTarget'
]
