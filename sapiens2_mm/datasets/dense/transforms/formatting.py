"""Pack a dense sample into ``inputs`` and a :class:`DenseDataSample`."""
import logging
from collections import Counter
from typing import Optional, Sequence

import numpy as np
import torch
from mmcv.transforms import BaseTransform
from mmengine.logging import print_log
from mmengine.structures import PixelData

from sapiens2_mm.registry import TRANSFORMS
from sapiens2_mm.structures import DenseDataSample

from .fields import present_fields
from .reporting import should_log

DEFAULT_META_KEYS = ('img_path', 'sample_idx', 'ori_shape', 'img_shape',
                     'padding_size', 'scale_factor', 'flip', 'flip_direction',
                     'cam_K', 'ori_cam_K', 'canonical_scale',
                     'cam_extrinsics', 'gt_mean_depth', 'num_invalid_pixels')


@TRANSFORMS.register_module()
class PackDenseInputs(BaseTransform):
    """``inputs`` (3, H, W) uint8 BGR tensor and ``data_samples`` with the
    target fields as ``PixelData`` (C, H, W) and the metainfo of
    ``meta_keys`` (matrices as float32 arrays; ``flip`` is False unless a
    flip set it).

    Training samples that fail the official filters are dropped (None: the
    mmengine dataset then draws another random index, as it does for any
    skipped training sample), counted per reason in :attr:`skipped` and
    logged (the first ten of each reason, then the 100th, 1000th, ...):

    * mask with fewer than ``min_mask_pixels`` (16) valid pixels;
    * mask covering more than ``max_mask_ratio`` (0.96) of the image;
    * pointmap: minimum canonical depth over the mask below
      ``min_canonical_depth`` (0.04);
    * albedo: largest per-channel standard deviation over the mask below
      ``min_albedo_std`` (0.02; the official code applies it when loading,
      before the augmentations).

    With ``test_mode=True`` nothing is dropped: a sample with an empty mask
    is kept (the metrics see no valid pixel) and counted in
    :attr:`empty_masks` with a warning.

    Args:
        test_mode: never drop samples.
        min_mask_pixels: see above (None disables).
        max_mask_ratio: see above (None disables).
        min_canonical_depth: see above (None disables).
        min_albedo_std: see above (None disables).
        meta_keys: keys copied to the metainfo when present.
    """

    def __init__(self, test_mode: bool = False,
                 min_mask_pixels: Optional[int] = 16,
                 max_mask_ratio: Optional[float] = 0.96,
                 min_canonical_depth: Optional[float] = 0.04,
                 min_albedo_std: Optional[float] = 0.02,
                 meta_keys: Sequence[str] = DEFAULT_META_KEYS) -> None:
        self.test_mode = test_mode
        self.min_mask_pixels = min_mask_pixels
        self.max_mask_ratio = max_mask_ratio
        self.min_canonical_depth = min_canonical_depth
        self.min_albedo_std = min_albedo_std
        self.meta_keys = tuple(meta_keys)
        self.skipped = Counter()
        self.empty_masks = 0

    def _drop_reason(self, results: dict) -> Optional[str]:
        mask = results.get('gt_mask')
        if mask is None:
            return None
        count = int(np.count_nonzero(mask))
        if self.min_mask_pixels is not None and count < self.min_mask_pixels:
            return f'mask has fewer than {self.min_mask_pixels} pixels'
        if self.max_mask_ratio is not None and \
                count > self.max_mask_ratio * mask.size:
            return f'mask covers more than {self.max_mask_ratio:.0%} of ' \
                'the image'
        if count == 0:
            return None
        points = results.get('gt_pointmap')
        if self.min_canonical_depth is not None and points is not None and \
                points[mask, 2].min() < self.min_canonical_depth:
            return f'canonical depth below {self.min_canonical_depth}'
        albedo = results.get('gt_albedo')
        if self.min_albedo_std is not None and albedo is not None and \
                albedo[mask].std(axis=0).max() < self.min_albedo_std:
            return f'albedo standard deviation below {self.min_albedo_std}'
        return None

    def transform(self, results: dict) -> Optional[dict]:
        if not self.test_mode:
            reason = self._drop_reason(results)
            if reason is not None:
                self.skipped[reason] += 1
                if should_log(self.skipped[reason]):
                    print_log(
                        f'Skipping training sample {results.get("img_path")}'
                        f': {reason}. Skipped so far (this worker): '
                        f'{dict(self.skipped)}.', logger='current',
                        level=logging.WARNING)
                return None
        elif results.get('gt_mask') is not None and \
                not results['gt_mask'].any():
            self.empty_masks += 1
            print_log(f'Test sample {results.get("img_path")} has no valid '
                      'pixel; it is kept and scores nothing '
                      f'({self.empty_masks} such samples so far).',
                      logger='current', level=logging.WARNING)

        img = results['img']
        if img.ndim == 2:
            img = img[..., None]
        inputs = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))
        sample = DenseDataSample()
        for key in present_fields(results):
            value = np.asarray(results[key])
            value = value[None] if value.ndim == 2 else value.transpose(2, 0, 1)
            sample.set_field(PixelData(data=torch.from_numpy(
                np.ascontiguousarray(value))), key)
        meta = dict(flip=False, flip_direction=None)
        for key in self.meta_keys:
            if key in results:
                value = results[key]
                if isinstance(value, np.ndarray) and value.dtype.kind == 'f':
                    value = value.astype(np.float32)
                meta[key] = value
        sample.set_metainfo(meta)
        return dict(inputs=inputs, data_samples=sample)
