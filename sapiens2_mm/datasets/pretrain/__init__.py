"""Unlabelled image folders and multi-view crops for pretraining."""
from .image_folder_dataset import IMAGE_EXTENSIONS, ImageFolderDataset
from .transforms import *  # noqa: F401,F403

__all__ = ['ImageFolderDataset', 'IMAGE_EXTENSIONS']
