"""mmseg's random flip with the left / right label swap as a lookup table."""
import mmcv
import numpy as np
from mmseg.datasets.transforms import RandomFlip

from sapiens2_mm.registry import TRANSFORMS

from ...transforms.lookup import UINT8_VALUES, apply_uint8_table


@TRANSFORMS.register_module()
class SegRandomFlipLUT(RandomFlip):
    """mmseg ``RandomFlip`` whose label swap (``swap_seg_labels``, e.g. left
    and right arm after a horizontal flip) is one 256-entry table for uint8
    label maps: the same flip decisions and the same label map.

    Upstream compares the whole map with both labels of every pair and
    writes each match (16 comparisons and 16 masked writes for the 8 seg29
    pairs: about 0.45 s per flip at 4096x3072 on this project's machine,
    and the rescaled seg image is up to 8192x6144). The swap is a function of
    the label value alone; here the table is upstream's own swap applied to
    the 256 values (a one-row map flipped vertically, which leaves its
    order), then looked up once. Upstream writes the swap through the
    flipped view into the label map it was given; this class leaves that
    array as it was (the pipeline replaces it either way). Maps of other
    dtypes, and flips without pairs, go to upstream.

    Args: those of mmseg ``RandomFlip``.
    """

    def _flip_seg_map(self, seg_map: np.ndarray, direction: str) -> np.ndarray:
        if self.swap_seg_labels is None or seg_map.dtype != np.uint8 or \
                seg_map.ndim != 2:
            return super()._flip_seg_map(seg_map, direction)
        table = super()._flip_seg_map(UINT8_VALUES[None].copy(),
                                      direction='vertical')[0]
        return apply_uint8_table(mmcv.imflip(seg_map, direction=direction),
                                 table)
