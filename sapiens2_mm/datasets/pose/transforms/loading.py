"""Image loading that reports or skips undecodable files (reference 5.2)."""
import logging

import mmcv
import numpy as np
from mmengine import fileio
from mmengine.logging import print_log
from mmpose.datasets.transforms import LoadImage

from ....registry import TRANSFORMS


@TRANSFORMS.register_module()
class Sapiens2LoadImage(LoadImage):
    """mmpose's ``LoadImage`` (BGR uint8 HWC) with explicit bad-image handling.

    Grayscale and RGBA files are decoded to 3-channel BGR (``color_type=
    'color'``: grey is replicated, alpha dropped), so the model always sees
    three channels. A file that is missing or cannot be decoded raises a
    ``ValueError`` naming it, or with ``skip_bad=True`` (training) returns
    ``None`` so the dataset draws another sample; :attr:`num_skipped` counts
    them and each one is logged.

    Args:
        skip_bad: skip instead of raising.
        **kwargs: mmpose ``LoadImage`` arguments.
    """

    def __init__(self, skip_bad: bool = False, **kwargs) -> None:
        kwargs.setdefault('color_type', 'color')
        super().__init__(**kwargs)
        self.skip_bad = skip_bad
        self.num_skipped = 0

    def transform(self, results: dict):
        if 'img' in results:
            return super().transform(results)
        path = results.get('img_path')
        try:
            img_bytes = fileio.get(path, backend_args=self.backend_args)
            img = mmcv.imfrombytes(img_bytes, flag=self.color_type,
                                   backend=self.imdecode_backend)
            if img is None or img.size == 0:
                raise ValueError('the decoder returned no pixels')
        except Exception as err:  # noqa: BLE001 - re-raised with the path
            if self.skip_bad:
                self.num_skipped += 1
                print_log(
                    f'Skipping unreadable image {path!r} ({err}); '
                    f'{self.num_skipped} skipped so far.', logger='current',
                    level=logging.WARNING)
                return None
            raise ValueError(
                f'Cannot read image {path!r}: {err}. Check that the file exists '
                'and is a valid image, or set skip_bad=True in the training '
                'pipeline to skip such files.') from err
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        if self.to_float32:
            img = img.astype(np.float32)
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results
