"""Albedo dataset: rgb/, mask/, albedo/ (sRGB PNG)."""
from sapiens2_mm.registry import DATASETS

from .base_dense_dataset import BaseDenseDataset


@DATASETS.register_module()
class AlbedoDataset(BaseDenseDataset):
    """``rgb/<name>.png|.jpg``, ``mask/<name>.png`` (optional,
    ``with_mask=False``) and ``albedo/<name>.png`` (8- or 16-bit sRGB, or
    ``.jpg`` / ``.tif``; the target is RGB / 255 (/ 65535) in [0, 1]). See
    :class:`BaseDenseDataset`."""

    TARGETS = dict(mask_path=('mask', ('.png',), 'mask'),
                   albedo_path=('albedo', ('.png', '.jpg', '.jpeg', '.tif',
                                           '.tiff'), 'albedo'))
    METAINFO = dict(task='albedo')
