"""Surface-normal dataset: rgb/, mask/, normal/ (.npy or .npz['normal'])."""
from sapiens2_mm.registry import DATASETS

from .base_dense_dataset import BaseDenseDataset


@DATASETS.register_module()
class NormalDataset(BaseDenseDataset):
    """``rgb/<name>.png|.jpg``, ``mask/<name>.png`` (channel 0 > 0 is
    valid) and ``normal/<name>.npy`` or ``.npz`` (key ``normal``): (H, W, 3)
    unit normals in the camera frame. See :class:`BaseDenseDataset`."""

    TARGETS = dict(mask_path=('mask', ('.png',), 'mask'),
                   normal_path=('normal', ('.npy', '.npz'), 'normals'))
    METAINFO = dict(task='normal')
