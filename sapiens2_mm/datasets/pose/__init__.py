"""Pose datasets and transforms (imports mmpose)."""
from ...codecs import Sapiens2UDPHeatmap  # noqa: F401 - registers the codec
from .sapiens308_dataset import Sapiens308Dataset
from .transforms import *  # noqa: F401,F403

__all__ = ['Sapiens308Dataset']
