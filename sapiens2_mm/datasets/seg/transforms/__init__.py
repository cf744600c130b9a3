"""Segmentation transforms (the rest of the pipeline reuses mmseg/mmcv)."""
from .crop import SegRandomCrop
from .flip import SegRandomFlipLUT
from .foreground_filter import SegFilterSmallForeground
from .loading import LoadSegAnnotations
from .noise import SegRandomGaussianBlur, SegRandomGaussianNoise
from .resize import SegLabelToOutputSize, SegRandomResize, SegResize
from .resize_crop import SegRandomResizeCrop

__all__ = [
    'SegRandomCrop', 'SegFilterSmallForeground', 'LoadSegAnnotations',
    'SegRandomGaussianBlur', 'SegRandomGaussianNoise',
    'SegRandomResize', 'SegResize', 'SegLabelToOutputSize',
    'SegRandomResizeCrop', 'SegRandomFlipLUT'
]
