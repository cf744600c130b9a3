"""Refuse (or skip) images smaller than the crops they must give."""
import logging
from typing import Optional, Sequence

from mmcv.transforms import BaseTransform
from mmengine.logging import print_log

from ....registry import TRANSFORMS


@TRANSFORMS.register_module()
class CheckMinImageSize(BaseTransform):
    """Check that ``img`` is at least ``min_size`` (H, W).

    Random resized crops would otherwise upsample a tiny image to the global
    crop size and teach the model blur.

    Args:
        min_size: (H, W) minimum, e.g. the global crop size.
        skip: return None (the dataset draws another image) and count in
            ``num_skipped`` instead of raising.
    """

    def __init__(self, min_size: Sequence[int], skip: bool = False):
        self.min_size = tuple(int(v) for v in min_size)
        self.skip = skip
        self.num_skipped = 0

    def transform(self, results: dict) -> Optional[dict]:
        height, width = results['img'].shape[:2]
        min_h, min_w = self.min_size
        if height >= min_h and width >= min_w:
            return results
        message = (f'Image {results.get("img_path")!r} is {height} x {width}, '
                   f'smaller than the crop size {min_h} x {min_w}.')
        if not self.skip:
            raise ValueError(
                message + ' Remove it, lower the crop size, or set '
                'CheckMinImageSize(skip=True) to skip such images.')
        self.num_skipped += 1
        print_log(f'{message} Skipped ({self.num_skipped} so far).',
                  logger='current', level=logging.WARNING)
        return None
