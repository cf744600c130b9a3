"""Sapiens2 pointmap head: canonical pointmap + canonical scale."""
import math
from typing import Dict, Optional, Sequence, Tuple, Union

import torch
from mmengine.logging import print_log
from torch import Tensor, nn

from ....registry import MODELS
from ....utils.official_keys import OfficialLayout
from .dense_head_base import DenseHeadBase, check_option, stack_metainfo
from .letterbox import letterbox_resize_factor, to_original_size

# The official 1b loss: seven terms.
POINTMAP_LOSSES = [
    dict(type='PointmapL1Loss', loss_weight=2.0),
    dict(type='PointmapMultiscaleL1Loss', loss_weight=1.0, scale_factor=2),
    dict(type='PointmapSiLogLoss', loss_weight=1.0),
    dict(type='PointmapIntrinsicsConsistencyLoss', loss_weight=1.0),
    dict(type='PointmapShiftInvariantL1Loss', loss_weight=1.0),
    dict(type='PointmapNormalLoss', loss_weight=2.0),
    dict(type='PointmapScaleL1Loss', loss_weight=4.0),
]
SCALE_GUARDS = ('error', 'clamp')
#: How the metric pointmap is brought to a larger photo: 'official' (the
#: official demo's ``resize_pointmap(smooth=True)``: a 3x3 Gaussian blur of
#: sigma 0.8 four times, then the bilinear resize) or 'none' (only the
#: bilinear resize). Photos smaller than the prediction are only resized.
RESIZE_SMOOTHING = ('official', 'none')


def build_scale_conv_stack(in_channels: int, out_channels: Sequence[int],
                           kernel_sizes: Sequence[int]) -> nn.Sequential:
    """[Conv2d(stride 2, pad (k-1)/2), InstanceNorm2d, SiLU] per entry.

    Each stage halves the grid (rounding up for 1x1 kernels): 64x48 ->
    32x24 -> 16x12 -> 8x6 for three stages at 1024x768 input.

    Raises:
        ValueError: mismatched lengths or an even kernel.
    """
    if len(out_channels) != len(kernel_sizes):
        raise ValueError(
            f'scale_conv_out_channels {tuple(out_channels)} and '
            f'scale_conv_kernel_sizes {tuple(kernel_sizes)} must have the '
            'same length.')
    layers = []
    for channels, kernel in zip(out_channels, kernel_sizes):
        if kernel % 2 == 0:
            raise ValueError(f'scale conv kernel must be odd, got {kernel}.')
        layers += [
            nn.Conv2d(in_channels, channels, kernel, stride=2,
                      padding=(kernel - 1) // 2),
            nn.InstanceNorm2d(channels, affine=False), nn.SiLU(inplace=True)]
        in_channels = channels
    return nn.Sequential(*layers)


def build_scale_mlp(widths: Sequence[int]) -> nn.Sequential:
    """[Flatten, Linear, SiLU, ..., Linear] over ``widths`` (first = input).

    Indices follow the official keys: Flatten at 0, Linears at 1, 3, 5.
    """
    if len(widths) < 2 or widths[-1] != 1:
        raise ValueError(
            f'scale_final_layer must list the flattened input width, the '
            f'hidden widths and a final 1, e.g. (6144, 512, 128, 1); got '
            f'{tuple(widths)}.')
    layers = [nn.Flatten()]
    for i in range(1, len(widths)):
        layers.append(nn.Linear(widths[i - 1], widths[i]))
        if i < len(widths) - 1:
            layers.append(nn.SiLU())
    return nn.Sequential(*layers)


@MODELS.register_module()
class PointmapHead(DenseHeadBase):
    """Official Sapiens2 pointmap head with its scale branch.

    The decoder (InstanceNorm2d, ``conv_pointmap``) predicts the canonical
    pointmap: metric X, Y, Z times s = 768 / fx, i.e. the points as seen by a
    camera of focal 768 px in the letterboxed frame. The scale branch runs on
    the *backbone feature*: ``scale_conv_layers`` (stride-2 1x1 convs) ->
    optional ``scale_pool`` -> ``scale_final_layer`` (Flatten + MLP) -> s
    (B, 1), from a bare Linear (it can be <= 0).

    Officially the flattened width is tied to the input size (1024x768: 128
    channels x 8 x 6 = 6144). ``scale_pool_size=(8, 6)`` adds an adaptive
    average pool to that grid before the flatten: the identity at 1024x768
    (official weights and outputs unchanged) and any input size works.
    ``None`` is the official layout.

    Args:
        in_channels: backbone channels C.
        upsample_channels: official (1536, 768, 512, 256) for 0.4b-1b,
            (1536, 768, 768, 768) for 5b.
        conv_out_channels: official (64, 32, 16); 5b (128, 64, 32).
        conv_kernel_sizes: official (3, 3, 3).
        scale_conv_out_channels: official (1536, 512, 128).
        scale_conv_kernel_sizes: official (1, 1, 1).
        scale_final_layer: MLP widths, first = flattened input (official
            (6144, 512, 128, 1)).
        scale_pool_size: (h, w) grid of the adaptive pool, or None (official).
        canonical_focal_length: 768 px, the focal of the canonical camera.
        scale_guard: what :meth:`postprocess_sample` does with a predicted
            scale <= ``min_scale`` or non-finite: ``'error'`` (raise, naming
            the image) or ``'clamp'`` (use ``min_scale`` and log a warning).
        min_scale: smallest usable scale.
        resize_smoothing: :data:`RESIZE_SMOOTHING`. ``'official'`` (default)
            blurs the metric map before enlarging it to a photo larger than
            the prediction (the saved points equal the official demo's; the
            point cloud shows no network-grid steps). ``'none'`` only
            resizes: every output pixel is the bilinear interpolation of
            the network's own values (sharper depth edges, more grid steps).
        loss_decode: default the official seven terms.
        **kwargs: :class:`DenseHeadBase` arguments.

    Shapes:
        (B, C, H/16, W/16) -> ((B, 3, H, W) canonical pointmap, (B, 1) scale).
    """

    output_conv_name = 'conv_pointmap'
    official_layout = OfficialLayout('pointmap', 'conv_pointmap.weight')
    norm = 'instance'
    target_field = 'gt_pointmap'
    postprocess_options = {'resize_smoothing': RESIZE_SMOOTHING}

    def __init__(self,
                 in_channels: int,
                 upsample_channels: Sequence[int] = (1536, 768, 512, 256),
                 scale_conv_out_channels: Sequence[int] = (1536, 512, 128),
                 scale_conv_kernel_sizes: Sequence[int] = (1, 1, 1),
                 scale_final_layer: Sequence[int] = (6144, 512, 128, 1),
                 scale_pool_size: Optional[Tuple[int, int]] = None,
                 canonical_focal_length: float = 768.0,
                 scale_guard: str = 'error',
                 min_scale: float = 1e-6,
                 resize_smoothing: str = 'official',
                 loss_decode=None,
                 **kwargs):
        if scale_guard not in SCALE_GUARDS:
            raise ValueError(
                f'scale_guard must be one of {SCALE_GUARDS}, got '
                f'{scale_guard!r}.')
        super().__init__(in_channels, upsample_channels=upsample_channels,
                         loss_decode=(POINTMAP_LOSSES if loss_decode is None
                                      else loss_decode), **kwargs)
        self.scale_conv_layers = build_scale_conv_stack(
            in_channels, scale_conv_out_channels, scale_conv_kernel_sizes)
        self.scale_pool = (nn.AdaptiveAvgPool2d(tuple(scale_pool_size))
                           if scale_pool_size is not None else nn.Identity())
        self.scale_final_layer = build_scale_mlp(scale_final_layer)
        if scale_pool_size is not None:
            channels = (scale_conv_out_channels[-1] if scale_conv_out_channels
                        else in_channels)
            pooled = channels * scale_pool_size[0] * scale_pool_size[1]
            if pooled != scale_final_layer[0]:
                raise ValueError(
                    f'scale_pool_size {tuple(scale_pool_size)} with '
                    f'{channels} channels gives {pooled} features but '
                    f'scale_final_layer starts at {scale_final_layer[0]}.')
        self.scale_pool_size = scale_pool_size
        self.canonical_focal_length = float(canonical_focal_length)
        self.scale_guard = scale_guard
        self.min_scale = float(min_scale)
        self.resize_smoothing = check_option(
            'resize_smoothing', resize_smoothing, RESIZE_SMOOTHING)

    def forward_scale(self, feat: Tensor) -> Tensor:
        """(B, C, h, w) backbone feature -> (B, 1) canonical scale.

        Raises:
            ValueError: without the pool, a feature grid whose flattened size
                is not the MLP's input width (another input size).
        """
        x = self.scale_pool(self.scale_conv_layers(feat))
        width = x.shape[1] * x.shape[2] * x.shape[3]
        expected = self.scale_final_layer[1].in_features
        if width != expected:
            raise ValueError(
                f'The pointmap scale branch flattens {x.shape[1]}x'
                f'{x.shape[2]}x{x.shape[3]} = {width} features but its MLP '
                f'takes {expected} (the input size it was built for, '
                '1024x768 officially). Use that input size, or set '
                'scale_pool_size=(8, 6) in the head (identical at 1024x768).')
        return self.scale_final_layer(x)

    def forward(self, inputs: Union[Tensor, Sequence[Tensor]]
                ) -> Tuple[Tensor, Tensor]:
        """Official outputs in the official order: (pointmap, scale)."""
        feat = self._transform_inputs(inputs)
        return self.decode(feat), self.forward_scale(feat)

    # ---------------------------------------------------------------- loss
    def split_outputs(self, outputs):
        """The pointmap and ``pred_scale`` for the scale loss."""
        pointmap, scale = outputs
        return pointmap, {'pred_scale': scale}

    def loss_context(self, data_samples, device) -> Dict[str, Tensor]:
        """``mean_depth`` (B,1,1,1), ``intrinsics`` (B,3,3), ``gt_scale`` (B,1)
        from the metainfo ``gt_mean_depth``, ``cam_K``, ``canonical_scale``."""
        owner = type(self).__name__
        return {
            'mean_depth': stack_metainfo(data_samples, 'gt_mean_depth', owner,
                                         device).reshape(-1, 1, 1, 1),
            'intrinsics': stack_metainfo(data_samples, 'cam_K', owner,
                                         device).reshape(-1, 3, 3),
            'gt_scale': stack_metainfo(data_samples, 'canonical_scale', owner,
                                       device).reshape(-1, 1),
        }

    # ------------------------------------------------------ test-time flip
    def merge_flipped(self, outputs, flipped):
        """Average pointmaps (mirror un-done, X negated) and scales."""
        pointmap = super().merge_flipped(outputs[0], flipped[0])
        return pointmap, (outputs[1] + flipped[1]) / 2

    # ----------------------------------------------------- post-processing
    def checked_scale(self, scale: float, meta: dict) -> float:
        """Apply ``scale_guard`` to a predicted scale."""
        if math.isfinite(scale) and scale > self.min_scale:
            return scale
        where = meta.get('img_path', 'an image without img_path')
        if self.scale_guard == 'error':
            raise ValueError(
                f'The pointmap head predicted a canonical scale of {scale} '
                f'for {where}; metric depth = canonical / scale needs a '
                f'scale > {self.min_scale}. The model may be untrained or the '
                "input far from its training data; set scale_guard='clamp' "
                'to clamp it instead (tools/infer.py, train.py, test.py: '
                '--cfg-options model.decode_head.scale_guard=clamp).')
        print_log(f'Pointmap scale {scale} of {where} clamped to '
                  f'{self.min_scale}.', logger='current', level=30)
        return self.min_scale

    def postprocess_sample(self, outputs, index: int, meta: dict
                           ) -> Tuple[Dict[str, Tensor], dict]:
        """Metric pointmap and depth at the original size, scale and focal.

        The official demo's order: metric = canonical / s at network
        resolution, then crop, (``resize_smoothing``) and resize.
        ``pred_pointmap`` (3, H_ori, W_ori) metric, ``pred_depth``
        (1, H_ori, W_ori) its Z; metainfo ``pred_scale`` = s and
        ``pred_focal_length`` = 768 / (s * r) px of the original image, with r
        the letterbox resize factor.
        """
        pointmap, scale = outputs
        s = self.checked_scale(float(scale[index].reshape(-1)[0]), meta)
        net_shape = tuple(pointmap.shape[-2:])
        divisor = scale[index:index + 1].reshape(1, 1)
        if float(divisor) != s:  # clamped by scale_guard
            divisor = torch.full_like(divisor, s)
        metric = to_original_size(
            pointmap[index:index + 1] / divisor, meta,
            negate_x=self.negate_x_on_flip,
            align_corners=self.align_corners,
            smooth=self.resize_smoothing == 'official')
        focal = self.canonical_focal_length / (
            s * letterbox_resize_factor(meta, net_shape))
        return ({'pred_pointmap': metric, 'pred_depth': metric[2:3]},
                {'pred_scale': s, 'pred_focal_length': focal})
