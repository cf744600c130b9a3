"""Sapiens2 surface-normal head."""
from typing import Dict, Tuple

import torch.nn.functional as F
from torch import Tensor

from ....registry import MODELS
from .dense_head_base import DenseHeadBase
from .letterbox import to_original_size

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
    metrics and :meth:`postprocess_sample` normalise it.

    Args:
        in_channels: backbone channels C.
        upsample_channels: official (768, 512, 256, 128) for 0.4b-1b,
            (1536, 768, 512, 256) for 5b.
        conv_out_channels: official (64, 32, 16); 5b (128, 64, 32).
        conv_kernel_sizes: official (3, 3, 3).
        loss_decode: default the official three terms.
        **kwargs: :class:`DenseHeadBase` arguments.

    Shapes:
        (B, C, H/16, W/16) -> (B, 3, H, W).
    """

    output_conv_name = 'conv_normal'
    norm = 'instance'
    target_field = 'gt_normal'
    negate_x_on_flip = True

    def __init__(self, in_channels: int, loss_decode=None, **kwargs):
        super().__init__(in_channels, loss_decode=(
            NORMAL_LOSSES if loss_decode is None else loss_decode), **kwargs)

    def postprocess_sample(self, outputs: Tensor, index: int, meta: dict
                           ) -> Tuple[Dict[str, Tensor], dict]:
        """Unit normals (3, H_ori, W_ori): crop, unflip, resize, normalise.

        Normalised after the bilinear resize (which shortens vectors between
        pixels); zero vectors stay zero (eps 1e-6).
        """
        normal = to_original_size(outputs[index:index + 1], meta,
                                  negate_x=True,
                                  align_corners=self.align_corners)
        return {'pred_normal': F.normalize(normal, dim=0, eps=1e-6)}, {}
