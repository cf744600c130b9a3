"""Pointmap dataset: rgb/, mask/, depth/, camera_intrinsics/,
camera_extrinsics/."""
from sapiens2_mm.registry import DATASETS

from .base_dense_dataset import BaseDenseDataset


@DATASETS.register_module()
class PointmapDataset(BaseDenseDataset):
    """``rgb/<name>.png|.jpg``, ``mask/<name>.png`` (optional,
    ``with_mask=False``), ``depth/<name>.npy`` (H, W) metric depth (camera
    Z; or a 16-bit PNG / TIFF with ``depth_scale`` of
    :class:`~sapiens2_mm.datasets.dense.transforms.LoadDenseAnnotations`, or
    an EXR), ``camera_intrinsics/<name>.txt`` (3x3)
    and ``camera_extrinsics/<name>.txt`` (4x4 world-to-camera, required as
    in the official layout). See :class:`BaseDenseDataset`."""

    TARGETS = dict(
        mask_path=('mask', ('.png',), 'mask'),
        depth_path=('depth', ('.npy', '.png', '.tif', '.tiff', '.exr'),
                    'depth'),
        cam_K_path=('camera_intrinsics', ('.txt',), 'intrinsics'),
        cam_extrinsics_path=('camera_extrinsics', ('.txt',), 'extrinsics'))
    METAINFO = dict(task='pointmap')
