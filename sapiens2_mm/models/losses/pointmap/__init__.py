"""Pointmap losses: the seven official terms (L1 x2, multiscale L1 x1, SiLog
x1, intrinsics consistency x1, shift-invariant L1 x1, normal x2, scale L1 x4)."""
from .depth_normalized_l1 import (
    PointmapL1Loss,
    PointmapMultiscaleL1Loss,
    PointmapShiftInvariantL1Loss,
)
from .intrinsics_consistency import PointmapIntrinsicsConsistencyLoss
from .normal_from_pointmap import PointmapNormalLoss, pointmap_normals
from .scale_l1 import PointmapScaleL1Loss
from .silog import PointmapSiLogLoss, guarded_sqrt

__all__ = [
    'PointmapL1Loss', 'PointmapMultiscaleL1Loss',
    'PointmapShiftInvariantL1Loss', 'PointmapIntrinsicsConsistencyLoss',
    'PointmapNormalLoss', 'pointmap_normals', 'PointmapScaleL1Loss',
    'PointmapSiLogLoss', 'guarded_sqrt'
]
