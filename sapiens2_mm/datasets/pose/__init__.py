"""Pose datasets and transforms (imports mmpose)."""
from ...codecs import Sapiens2UDPHeatmap  # noqa: F401 - registers the codec
from .mmpose_metainfo import use_installed_mmpose_metainfo
from .sapiens308_dataset import Sapiens308Dataset
from .transforms import *  # noqa: F401,F403

use_installed_mmpose_metainfo()

__all__ = ['Sapiens308Dataset', 'use_installed_mmpose_metainfo']
