"""Sapiens2 body-part segmentation head (deconv upsampler + 1x1 classifier).

Sapiens2 (Khirodkar et al., ICLR 2026, arXiv 2604.21681); see docs/seg.md.
"""
import copy
from typing import List, Optional, Sequence, Tuple, Union

import torch
from mmseg.models.decode_heads.decode_head import BaseDecodeHead

from ....registry import MODELS
from ....utils.official_keys import OfficialLayout
from ...layers.conv_stacks import build_conv_stack, build_deconv_stack

# Upstream default loss written out with its scope prefix: mmseg's registry holds it.
_DEFAULT_LOSS = dict(type='mmseg.CrossEntropyLoss', loss_weight=1.0)
# The official head init: kaiming-normal (fan_out, relu) Conv2d weights, 0 bias.
_DEFAULT_INIT = dict(type='Kaiming', layer='Conv2d', mode='fan_out',
                     nonlinearity='relu', distribution='normal', bias=0)


@MODELS.register_module()
class SegHead(BaseDecodeHead):
    """Official Sapiens2 segmentation head as an mmseg decode head.

    Layout (official parameter names, so official checkpoints load unchanged):
    ``deconv_layers`` (4 x [ConvTranspose2d k4 s2, IN, SiLU] = x16) ->
    ``conv_layers`` ([Conv2d, IN, SiLU] per entry) -> ``conv_seg`` (1x1 to
    ``num_classes``). Sequential indices skip the parameter-free norm and
    activation, giving ``deconv_layers.{0,3,6,9}`` and ``conv_layers.{0,3}``.
    No dropout (official has none), so ``dropout_ratio`` defaults to 0.

    Args:
        in_channels: backbone embed dim C.
        num_classes: output classes (29).
        deconv_out_channels: channels of each x2 transposed conv.
        deconv_kernel_sizes: kernels (4, 3 or 2) of the transposed convs.
        conv_out_channels: channels of the stride-1 convs.
        conv_kernel_sizes: kernels of the stride-1 convs.
        **kwargs: :class:`BaseDecodeHead` arguments (``loss_decode``,
            ``ignore_index``, ``align_corners``, ``init_cfg`` ...).

    Shapes:
        input: tuple of (B, C, H/16, W/16) feature maps (the last is used).
        output: (B, num_classes, H, W) logits for four x2 deconvs; the 4K
        head (stride-64 features, five deconvs) gives (B, K, H/2, W/2).
    """
    official_layout = OfficialLayout('seg', 'conv_seg.weight')

    def __init__(self,
                 in_channels: int,
                 num_classes: int = 29,
                 deconv_out_channels: Sequence[int] = (512, 256, 128, 64),
                 deconv_kernel_sizes: Sequence[int] = (4, 4, 4, 4),
                 conv_out_channels: Sequence[int] = (64, 64),
                 conv_kernel_sizes: Sequence[int] = (1, 1),
                 dropout_ratio: float = 0.0,
                 loss_decode: Union[dict, Sequence[dict]] = _DEFAULT_LOSS,
                 init_cfg: Optional[Union[dict, list]] = _DEFAULT_INIT,
                 **kwargs) -> None:
        channels = (list(conv_out_channels) + list(deconv_out_channels) +
                    [in_channels])[0]
        # The official init (kaiming-normal fan_out on Conv2d weights, zero
        # biases) replaces mmseg's Normal(std=0.01) on conv_seg. mmengine's
        # ``layer='Conv2d'`` matches by class name, so ConvTranspose2d keeps
        # PyTorch's default init, as in the official head.
        super().__init__(in_channels, channels, num_classes=num_classes,
                         dropout_ratio=dropout_ratio,
                         loss_decode=copy.deepcopy(loss_decode),
                         init_cfg=copy.deepcopy(init_cfg), **kwargs)
        self.deconv_layers = build_deconv_stack(in_channels, deconv_out_channels,
                                            deconv_kernel_sizes)
        mid = deconv_out_channels[-1] if deconv_out_channels else in_channels
        self.conv_layers = build_conv_stack(mid, conv_out_channels,
                                        conv_kernel_sizes)

    def forward(self, inputs: Tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Upsample the last feature map and classify every pixel.

        Args:
            inputs: backbone outputs; ``inputs[in_index]`` is (B, C, h, w).

        Returns:
            (B, num_classes, h * 2**N, w * 2**N) logits, N = number of deconvs.
        """
        x = self._transform_inputs(inputs)
        x = self.deconv_layers(x)
        x = self.conv_layers(x)
        return self.cls_seg(x)

    def predict_by_feat(self, seg_logits: torch.Tensor,
                        batch_img_metas: List[dict]) -> torch.Tensor:
        """Logits for the segmentor's ``postprocess_result``.

        mmseg resizes the logits to the input size here, and the segmentor
        then crops the padding and resizes them again to the original size.
        When nothing is padded, the first resize only matters for a head
        that predicts below the input size (the 4K head: 2048x1536 logits of
        a 4096x3072 input) and there it costs a (K, 4096, 4096 * 3 / 4)
        float32 map (1.5 GB for 29 classes) and a second interpolation: it
        is skipped, and the postprocess resizes once, straight to the
        original size. With padding (given in input pixels) or in slide
        inference (``img_shape`` a ``torch.Size``) mmseg's resize runs.

        Args:
            seg_logits: (B, K, h, w) head output.
            batch_img_metas: metainfo of the batch.

        Returns:
            (B, K, h, w) unchanged, or resized to the input size.
        """
        meta = batch_img_metas[0]
        padding = meta.get('img_padding_size', meta.get('padding_size'))
        slide = isinstance(meta.get('img_shape'), torch.Size)
        if not slide and not any(padding or ()):
            return seg_logits
        return super().predict_by_feat(seg_logits, batch_img_metas)
