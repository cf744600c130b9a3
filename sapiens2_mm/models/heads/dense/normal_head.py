"""Sapiens2 surface-normal head."""
from typing import Dict, Tuple

import torch.nn.functional as F
from torch import Tensor

from ....registry import MODELS
from ....utils.official_keys import OfficialLayout
from .dense_head_base import DenseHeadBase, check_option
from .letterbox import to_original_size

#: When ``pred_normal`` is made unit length: 'before_resize' (the official
#: demo: at network resolution, then crop and resize, not re-normalized) or
#: 'after_resize' (crop, resize, then normalize: every output pixel exactly
#: unit length).
NORMALIZE_ORDERS = ('before_resize', 'after_resize')
# The official demo divides by the norm clamped at 1e-8.
OFFICIAL_NORM_EPS = 1e-8

# The official 1b loss: cosine x10, L1 x1 (raw prediction), gradient MSE x10.
NORMAL_LOSSES = [
    dict(type='NormalCosineSimilarityLoss', loss_weight=10.0),
    dict(type='MaskedL1Loss', loss_weight=1.0),
    dict(type='NormalGradL1Loss', loss_weight=10.0),
]


@MODELS.register_module()
class NormalHead(DenseHeadBase):
    """Official Sapiens2 normal head: pixel-shuffle decoder + ``conv_normal``.

    InstanceNorm2d (no affine, no keys) after every conv. The output is the raw
    3-vector per pixel, not unit length (official); the cosine loss, the
    metrics and :meth:`postprocess_sample` normalize it.

    Args:
        in_channels: backbone channels C.
        upsample_channels: official (768, 512, 256, 128) for 0.4b-1b,
            (1536, 768, 512, 256) for 5b.
        conv_out_channels: official (64, 32, 16); 5b (128, 64, 32).
        conv_kernel_sizes: official (3, 3, 3).
        loss_decode: default the official three terms.
        normalize: when :meth:`postprocess_sample` makes the normals unit
            length (:data:`NORMALIZE_ORDERS`). ``'before_resize'`` (default)
            is the official demo: unit length at network resolution, then the
            letterbox is cropped and the map resized bilinearly, and not
            re-normalized (between network pixels the vectors are slightly
            shorter than 1; the saved maps equal the official ones).
            ``'after_resize'`` normalizes after the resize: every pixel is
            exactly unit length, for code that assumes it (e.g. angles by
            dot products without normalizing).
        **kwargs: :class:`DenseHeadBase` arguments.

    Shapes:
        (B, C, H/16, W/16) -> (B, 3, H, W).
    """

    output_conv_name = 'conv_normal'
    official_layout = OfficialLayout('normal', 'conv_normal.weight')
    norm = 'instance'
    target_field = 'gt_normal'
    postprocess_options = {'normalize': NORMALIZE_ORDERS}

    def __init__(self, in_channels: int, loss_decode=None,
                 normalize: str = 'before_resize', **kwargs):
        super().__init__(in_channels, loss_decode=(
            NORMAL_LOSSES if loss_decode is None else loss_decode), **kwargs)
        self.normalize = check_option('normalize', normalize,
                                      NORMALIZE_ORDERS)

    def postprocess_sample(self, outputs: Tensor, index: int, meta: dict
                           ) -> Tuple[Dict[str, Tensor], dict]:
        """Normals (3, H_ori, W_ori): crop, unflip, resize, and make them unit
        length before (official) or after the resize (``normalize``).

        Before: ``n / max(|n|, 1e-8)`` as the official demo. After:
        ``F.normalize`` (eps 1e-6). Zero vectors stay zero either way.
        """
        normal = outputs[index:index + 1]
        if self.normalize == 'before_resize':
            length = normal.norm(dim=1, keepdim=True)
            normal = normal / length.clamp(min=OFFICIAL_NORM_EPS)
        normal = to_original_size(normal, meta, self.negate_x_on_flip,
                                  align_corners=self.align_corners)
        if self.normalize == 'after_resize':
            normal = F.normalize(normal, dim=0, eps=1e-6)
        return {'pred_normal': normal}, {}
