"""Loading of 29-class label maps with checks that name the file.

Images load with the shared :class:`Sapiens2LoadImage`.
"""
from typing import Optional

import mmcv
import numpy as np
from mmengine import fileio
from mmseg.datasets.transforms import LoadAnnotations

from sapiens2_mm.registry import TRANSFORMS


def _read_bytes(path: str, what: str, backend_args: Optional[dict]) -> bytes:
    try:
        return fileio.get(path, backend_args=backend_args)
    except Exception as err:  # noqa: BLE001 - re-raised with the file named
        raise FileNotFoundError(
            f'Cannot read {what} {path!r} ({type(err).__name__}: {err}). '
            'Check data_root / data_prefix and that the file exists.') from err


@TRANSFORMS.register_module()
class LoadSegAnnotations(LoadAnnotations):
    """mmseg ``LoadAnnotations`` for label maps checked against the classes.

    The PNG must be single-channel with values in ``[0, num_classes)`` or
    ``ignore_index``, and must have the size of the image loaded before it.
    Every violation raises ``ValueError`` naming the file, the bad values or
    sizes, and what to do.

    Args:
        num_classes: number of classes (29).
        ignore_index: the ignore label (255).
        **kwargs: :class:`mmseg.datasets.transforms.LoadAnnotations` args.
    """

    def __init__(self, num_classes: int = 29, ignore_index: int = 255,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.ignore_index = ignore_index

    def _load_seg_map(self, results: dict) -> None:
        path = results['seg_map_path']
        data = _read_bytes(path, 'label map', self.backend_args)
        try:
            seg = mmcv.imfrombytes(data, flag='unchanged',
                                   backend=self.imdecode_backend)
        except Exception:  # noqa: BLE001 - reported below as undecodable
            seg = None
        if seg is None:
            raise ValueError(
                f'Label map {path!r} could not be decoded; it is empty, '
                'truncated or not an image. Re-export it as a PNG.')
        seg = seg.squeeze()
        if seg.ndim != 2:
            raise ValueError(
                f'Label map {path!r} has shape {seg.shape}; expected a '
                'single-channel (H, W) PNG of class indices, not a color '
                'rendering.')
        values = np.unique(seg)
        bad = values[(values >= self.num_classes) & (values != self.ignore_index)]
        if bad.size or values.min() < 0:
            bad = np.concatenate([values[values < 0], bad])
            raise ValueError(
                f'Label map {path!r} holds values {bad.tolist()[:10]} outside '
                f'[0, {self.num_classes - 1}] and not {self.ignore_index} '
                '(ignore). Map the source taxonomy to the 29 classes first '
                '(see docs/seg.md).')
        img_shape = results.get('ori_shape', results.get('img_shape'))
        if img_shape is not None and tuple(seg.shape) != tuple(img_shape[:2]):
            raise ValueError(
                f'Label map {path!r} is {seg.shape[0]}x{seg.shape[1]} (HxW) but '
                f'its image {results.get("img_path")!r} is '
                f'{img_shape[0]}x{img_shape[1]}; they must have the same size.')
        results['gt_seg_map'] = seg.astype(np.uint8)
        results['seg_fields'].append('gt_seg_map')
