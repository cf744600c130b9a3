"""Pixel-shuffle decoder shared by the Sapiens2 normal, pointmap and albedo heads.

Layout (official parameter names, so official task checkpoints load unchanged):

* ``input_conv`` = [Conv2d(C, C, 3, pad 1), Norm(C), SiLU]
* ``upsample_blocks.{i}`` = [Conv2d(c_in, 4 c_out, 3, pad 1), PixelShuffle(2),
  Norm(c_out), SiLU] per entry of ``upsample_channels`` (four give x16)
* ``conv_layers`` = [Conv2d(k, pad (k-1)/2), Norm, SiLU] per entry of
  ``conv_out_channels``
* a final 1x1 Conv2d to 3 channels, named by the head (``conv_normal`` ...),
  with no output activation.

Norm is InstanceNorm2d without affine parameters (normal, pointmap; no keys) or
a channel RMSNorm with a learnable weight at ``<...>.norm.weight`` (albedo).
"""
from typing import Sequence

from torch import nn

from ...layers.norms import RMSNorm2d

NORM_TYPES = ('instance', 'rms')


def build_norm2d(norm: str, channels: int) -> nn.Module:
    """The decoder's per-stage normalization.

    Args:
        norm: ``'instance'`` (InstanceNorm2d, affine=False) or ``'rms'``
            (:class:`RMSNorm2d`, eps 1e-6).
        channels: C of the (B, C, H, W) map.

    Raises:
        ValueError: an unknown ``norm``.
    """
    if norm == 'instance':
        return nn.InstanceNorm2d(channels, affine=False)
    if norm == 'rms':
        return RMSNorm2d(channels, eps=1e-6)
    raise ValueError(f'Unknown decoder norm {norm!r}; use one of {NORM_TYPES}.')


def build_input_conv(channels: int, norm: str) -> nn.Sequential:
    """[Conv2d(C, C, 3, pad 1), Norm(C), SiLU]: (B, C, h, w) -> same shape."""
    return nn.Sequential(
        nn.Conv2d(channels, channels, kernel_size=3, padding=1),
        build_norm2d(norm, channels), nn.SiLU(inplace=True))


def build_upsample_blocks(in_channels: int, out_channels: Sequence[int],
                          norm: str) -> nn.Sequential:
    """x2 pixel-shuffle stages: (B, c_in, h, w) -> (B, c_out, 2h, 2w) each.

    Every stage is its own Sequential (keys ``upsample_blocks.{i}.0.weight``;
    the RMSNorm weight of stage i is ``upsample_blocks.{i}.2.norm.weight``).
    """
    blocks = []
    for channels in out_channels:
        blocks.append(nn.Sequential(
            nn.Conv2d(in_channels, channels * 4, kernel_size=3, padding=1),
            nn.PixelShuffle(2),
            build_norm2d(norm, channels), nn.SiLU(inplace=True)))
        in_channels = channels
    return nn.Sequential(*blocks)
