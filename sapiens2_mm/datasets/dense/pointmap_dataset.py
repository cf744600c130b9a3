"""Pointmap dataset: rgb/, mask/, depth/, camera_intrinsics/,
camera_extrinsics/."""
from sapiens2_mm.registry import DATASETS

from .base_dense_dataset import BaseDenseDataset


@DATASETS.register_module()
class PointmapDataset(BaseDenseDataset):
    """``rgb/<name>.png|.jpg``, ``mask/<name>.png``, ``depth/<name>.npy``
    (H, W) metric depth (camera Z), ``camera_intrinsics/<name>.txt`` (3x3)
    and ``camera_extrinsics/<name>.txt`` (4x4 world-to-camera, required as
    in the official layout). See :class:`BaseDenseDataset`."""

    TARGETS = dict(
        mask_path=('mask', ('.png',), 'mask'),
        depth_path=('depth', ('.npy',), 'depth'),
        cam_K_path=('camera_intrinsics', ('.txt',), 'intrinsics'),
        cam_extrinsics_path=('camera_extrinsics', ('.txt',), 'extrinsics'))
    METAINFO = dict(task='pointmap')
