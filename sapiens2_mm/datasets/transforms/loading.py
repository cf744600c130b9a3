"""Image loading shared by every task: bad files are named or skipped."""
import logging
from typing import Optional

import mmcv
import numpy as np
from mmcv.transforms import LoadImageFromFile
from mmengine import fileio
from mmengine.logging import print_log

from ...registry import TRANSFORMS


@TRANSFORMS.register_module()
class Sapiens2LoadImage(LoadImageFromFile):
    """Load ``img`` (H, W, 3) uint8 BGR, naming or skipping unreadable files.

    mmcv's loader raises a bare ``AssertionError('failed to load image')`` for a
    file that exists but does not decode, without the path. Here a missing or
    undecodable file raises ``ValueError`` naming it, or with ``skip_bad=True``
    (training) returns ``None`` so the dataset draws another sample;
    :attr:`num_skipped` counts them and each one is logged. Grayscale and RGBA
    files decode to 3-channel BGR (``color_type='color'``). An image already in
    ``results['img']`` (arrays given to an inferencer) is kept, as mmpose's
    ``LoadImage`` does.

    Args:
        skip_bad: skip instead of raising.
        **kwargs: mmcv ``LoadImageFromFile`` arguments.

    Outputs ``img``, ``img_shape`` and ``ori_shape``.
    """

    def __init__(self, skip_bad: bool = False, **kwargs) -> None:
        kwargs.setdefault('color_type', 'color')
        super().__init__(**kwargs)
        self.skip_bad = skip_bad
        self.num_skipped = 0

    def _decode(self, path: str) -> np.ndarray:
        img_bytes = fileio.get(path, backend_args=self.backend_args)
        img = mmcv.imfrombytes(img_bytes, flag=self.color_type,
                               backend=self.imdecode_backend)
        if img is None or img.size == 0:
            raise ValueError('the decoder returned no pixels')
        return img

    def transform(self, results: dict) -> Optional[dict]:
        if 'img' in results:
            img = results['img']
            results.setdefault('img_path', None)
        else:
            path = results.get('img_path')
            try:
                img = self._decode(path)
            except Exception as err:  # noqa: BLE001 - re-raised with the path
                if not self.skip_bad:
                    raise ValueError(
                        f'Cannot read image {path!r}: {err}. Check that the '
                        'file exists and is a valid image, or set skip_bad=True '
                        'in the training pipeline to skip such files.') from err
                self.num_skipped += 1
                print_log(
                    f'Skipping unreadable image {path!r} ({err}); '
                    f'{self.num_skipped} skipped so far.', logger='current',
                    level=logging.WARNING)
                return None
        if img.ndim == 2:  # color_type='grayscale': the backbone wants 3
            img = np.repeat(img[..., None], 3, axis=2)
        if self.to_float32:
            img = img.astype(np.float32)
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results
