"""Dense-task datasets (normal, pointmap, albedo) and their transforms (the
procedural scene generator of the test data is
tools/dataset_converters/synthetic_dense.py)."""
from .albedo_dataset import AlbedoDataset
from .base_dense_dataset import BaseDenseDataset
from .normal_dataset import NormalDataset
from .pointmap_dataset import PointmapDataset
from .transforms import *  # noqa: F401,F403

__all__ = ['AlbedoDataset', 'BaseDenseDataset', 'NormalDataset',
           'PointmapDataset']
