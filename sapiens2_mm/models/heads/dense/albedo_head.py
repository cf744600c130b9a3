"""Sapiens2 albedo head (channel-RMSNorm decoder)."""
from typing import Dict, Tuple

from torch import Tensor

from ....registry import MODELS
from ....utils.official_keys import OfficialLayout
from ...layers.norms import RMSNorm2d
from .dense_head_base import DenseHeadBase, check_option
from .letterbox import to_original_size

#: When ``pred_albedo`` is clamped to [0, 1]: 'before_resize' (the official
#: demo: clamp at network resolution, then crop and resize) or
#: 'after_resize' (crop and resize the raw map, then clamp).
CLAMP_ORDERS = ('before_resize', 'after_resize')

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
        clamp: when (:data:`CLAMP_ORDERS`). ``'before_resize'`` (default) is
            the official demo: clamped at network resolution, then cropped
            and resized (the saved maps equal the official ones).
            ``'after_resize'`` clamps the resized raw map: the same map as
            clamping ``pred_albedo_raw``, i.e. one raw prediction and its
            clamped view agree pixel by pixel; it differs from the official
            map only where the raw map leaves [0, 1] next to a pixel.
        norm_layout: memory layout of the RMS norms (``'official'``:
            outputs equal the official head's exactly; ``'channels_last'``:
            faster on CPU, ~1e-5 off; see :class:`RMSNorm2d`).
        **kwargs: :class:`DenseHeadBase` arguments.

    Shapes:
        (B, C, H/16, W/16) -> (B, 3, H, W).
    """

    output_conv_name = 'conv_albedo'
    official_layout = OfficialLayout('albedo', 'conv_albedo.weight')
    norm = 'rms'
    target_field = 'gt_albedo'
    postprocess_options = {'clamp': CLAMP_ORDERS,
                           'clamp_output': (True, False)}

    def __init__(self, in_channels: int, loss_decode=None,
                 clamp_output: bool = True, clamp: str = 'before_resize',
                 norm_layout: str = 'official', **kwargs):
        super().__init__(in_channels, loss_decode=(
            ALBEDO_LOSSES if loss_decode is None else loss_decode), **kwargs)
        for module in self.modules():
            if isinstance(module, RMSNorm2d):
                module.layout = check_option('norm_layout', norm_layout,
                                             ('official', 'channels_last'))
        self.clamp_output = clamp_output
        self.clamp = check_option('clamp', clamp, CLAMP_ORDERS)

    def _original(self, albedo: Tensor, meta: dict) -> Tensor:
        return to_original_size(albedo, meta, self.negate_x_on_flip,
                                align_corners=self.align_corners)

    def postprocess_sample(self, outputs: Tensor, index: int, meta: dict
                           ) -> Tuple[Dict[str, Tensor], dict]:
        """``pred_albedo`` (3, H_ori, W_ori) in [0, 1] and ``pred_albedo_raw``
        (the unclamped map, cropped and resized)."""
        raw = outputs[index:index + 1]
        albedo = self._original(raw, meta)
        if not self.clamp_output:
            return {'pred_albedo': albedo}, {}
        if self.clamp == 'before_resize':
            clamped = self._original(raw.clamp(0, 1), meta)
        else:
            clamped = albedo.clamp(0, 1)
        return {'pred_albedo': clamped, 'pred_albedo_raw': albedo}, {}
