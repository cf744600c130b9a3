"""Dense-task metrics: surface normals, pointmaps (+ depth, scale), albedo."""
from .albedo_metric import AlbedoMetric
from .normal_metric import NormalMetric
from .pointmap_metric import PointmapMetric

__all__ = ['NormalMetric', 'PointmapMetric', 'AlbedoMetric']
