"""Surface-normal dataset: rgb/, mask/, normal/ (.npy, .npz['normal'], PNG
normal maps or EXR)."""
from sapiens2_mm.registry import DATASETS

from .base_dense_dataset import BaseDenseDataset


@DATASETS.register_module()
class NormalDataset(BaseDenseDataset):
    """``rgb/<name>.png|.jpg``, ``mask/<name>.png`` (channel 0 > 0 is
    valid; optional, ``with_mask=False``) and ``normal/<name>``: ``.npy`` or
    ``.npz`` (key ``normal``) (H, W, 3) unit normals in the camera frame, an
    8/16-bit PNG / TIFF normal map (``n = 2 c - 1``) or an EXR; the frame
    of the files is ``normal_convention`` of
    :class:`~sapiens2_mm.datasets.dense.transforms.LoadDenseAnnotations`.
    See :class:`BaseDenseDataset`."""

    TARGETS = dict(mask_path=('mask', ('.png',), 'mask'),
                   normal_path=('normal', ('.npy', '.npz', '.png', '.tif',
                                           '.tiff', '.exr'), 'normals'))
    METAINFO = dict(task='normal')
