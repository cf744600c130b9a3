"""Sapiens2 albedo head (channel-RMSNorm decoder)."""
from typing import Dict, Tuple

from torch import Tensor

from ....registry import MODELS
from .dense_head_base import DenseHeadBase
from .letterbox import to_original_size

# The official 1b loss: L1 x2, gradient MSE x2, chromaticity x1.
ALBEDO_LOSSES = [
    dict(type='MaskedL1Loss', loss_weight=2.0),
    dict(type='AlbedoGradL1Loss', loss_weight=2.0),
    dict(type='AlbedoChromaticityL1Loss', loss_weight=1.0),
]


@MODELS.register_module()
class AlbedoHead(DenseHeadBase):
    """Official Sapiens2 albedo head: pixel-shuffle decoder + ``conv_albedo``.

    The norm after every conv is an RMSNorm over the channels at each pixel
    with a learnable weight (keys ``input_conv.1.norm.weight``,
    ``upsample_blocks.{i}.2.norm.weight``, ``conv_layers.{1,4,7}.norm.weight``).
    The output is unbounded RGB (official).

    Args:
        in_channels: backbone channels C.
        upsample_channels: official (768, 512, 256, 128) for 0.4b-1b,
            (1536, 768, 512, 256) for 5b.
        conv_out_channels: official (64, 32, 16) for every size.
        conv_kernel_sizes: official (3, 3, 3).
        loss_decode: default the official three terms.
        clamp_output: clamp ``pred_albedo`` to [0, 1] in :meth:`predict`
            outputs (the official demo does; the unclamped map is kept as
            ``pred_albedo_raw``, which the official evaluator scores).
        **kwargs: :class:`DenseHeadBase` arguments.

    Shapes:
        (B, C, H/16, W/16) -> (B, 3, H, W).
    """

    output_conv_name = 'conv_albedo'
    norm = 'rms'
    target_field = 'gt_albedo'
    negate_x_on_flip = False

    def __init__(self, in_channels: int, loss_decode=None,
                 clamp_output: bool = True, **kwargs):
        super().__init__(in_channels, loss_decode=(
            ALBEDO_LOSSES if loss_decode is None else loss_decode), **kwargs)
        self.clamp_output = clamp_output

    def postprocess_sample(self, outputs: Tensor, index: int, meta: dict
                           ) -> Tuple[Dict[str, Tensor], dict]:
        """``pred_albedo`` (3, H_ori, W_ori) in [0, 1] and ``pred_albedo_raw``."""
        albedo = to_original_size(outputs[index:index + 1], meta,
                                  negate_x=False,
                                  align_corners=self.align_corners)
        if not self.clamp_output:
            return {'pred_albedo': albedo}, {}
        return {'pred_albedo': albedo.clamp(0, 1),
                'pred_albedo_raw': albedo}, {}
