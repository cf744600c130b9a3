"""Dense heads (pixel-shuffle decoder): surface normal, pointmap, albedo."""
from .albedo_head import AlbedoHead
from .dense_head_base import DenseHeadBase
from .normal_head import NormalHead
from .pointmap_head import PointmapHead

__all__ = ['AlbedoHead', 'DenseHeadBase', 'NormalHead', 'PointmapHead']
