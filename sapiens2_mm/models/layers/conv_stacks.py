"""Conv / transposed-conv stacks of the Sapiens2 task heads."""
from typing import Callable, Optional, Sequence

from torch import nn

# ConvTranspose2d kernel -> (padding, output_padding) giving an exact x2.
DECONV_PADDING = {4: (1, 0), 3: (1, 1), 2: (0, 0)}


def build_deconv_stack(in_channels: int, out_channels: Sequence[int],
                       kernel_sizes: Sequence[int]) -> nn.Sequential:
    """[ConvTranspose2d x2 (no bias), InstanceNorm2d (no affine), SiLU] x N.

    Sequential indices 0, 3, 6, ... hold the weights, as in the official keys
    ``deconv_layers.{0,3,...}.weight``. Each stage maps (B, C_in, H, W) to
    (B, C_out, 2H, 2W).

    Raises:
        ValueError: a kernel size other than 2, 3 or 4, or mismatched lengths.
    """
    if len(out_channels) != len(kernel_sizes):
        raise ValueError(
            f'deconv_out_channels {tuple(out_channels)} and deconv_kernel_sizes '
            f'{tuple(kernel_sizes)} must have the same length.')
    layers = []
    for channels, kernel in zip(out_channels, kernel_sizes):
        if kernel not in DECONV_PADDING:
            raise ValueError(
                f'deconv kernel size {kernel} is not supported; use one of '
                f'{sorted(DECONV_PADDING)}.')
        padding, output_padding = DECONV_PADDING[kernel]
        layers += [
            nn.ConvTranspose2d(in_channels, channels, kernel, stride=2,
                               padding=padding, output_padding=output_padding,
                               bias=False),
            nn.InstanceNorm2d(channels, affine=False),
            nn.SiLU(inplace=True),
        ]
        in_channels = channels
    return nn.Sequential(*layers)


def _instance_norm(channels: int) -> nn.Module:
    return nn.InstanceNorm2d(channels, affine=False)


def build_conv_stack(
        in_channels: int, out_channels: Sequence[int],
        kernel_sizes: Sequence[int],
        make_norm: Optional[Callable[[int], nn.Module]] = None
) -> nn.Sequential:
    """[Conv2d (bias, 'same' padding), Norm, SiLU] x N, weights at 0, 3, 6, ...

    Args:
        in_channels: C of the (B, C, H, W) input.
        out_channels: output channels of each stage.
        kernel_sizes: odd kernel size of each stage.
        make_norm: channels -> norm module; InstanceNorm2d without affine
            parameters (pose, seg, normal, pointmap) when None.

    Raises:
        ValueError: mismatched lengths or an even kernel size.
    """
    if len(out_channels) != len(kernel_sizes):
        raise ValueError(
            f'conv_out_channels {tuple(out_channels)} and conv_kernel_sizes '
            f'{tuple(kernel_sizes)} must have the same length.')
    layers = []
    for channels, kernel in zip(out_channels, kernel_sizes):
        if kernel % 2 == 0:
            raise ValueError(f'conv kernel size must be odd, got {kernel}.')
        layers += [
            nn.Conv2d(in_channels, channels, kernel, padding=(kernel - 1) // 2),
            (make_norm or _instance_norm)(channels),
            nn.SiLU(inplace=True),
        ]
        in_channels = channels
    return nn.Sequential(*layers)
