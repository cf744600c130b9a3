"""Map a dense prediction from the letterboxed network frame to the image.

The same steps as mmseg's ``DepthEstimator.postprocess_result`` (crop the
``padding_size`` (left, right, top, bottom), undo a flip, resize to
``ori_shape``), plus the sign change of the x component that a horizontal
mirror needs for normals and pointmaps (mmseg only mirrors the pixels), and
the official pointmap demo's smoothing before an enlargement
(:func:`smooth_for_enlargement`).
"""
from typing import Sequence, Tuple

import torch
import torch.nn.functional as F
from torchvision.transforms import functional as TVF

# The official pointmap demo (``resize_pointmap(..., smooth=True)``): a 3x3
# Gaussian blur of sigma 0.8, four times, before a bilinear enlargement.
SMOOTH_KERNEL = 3
SMOOTH_SIGMA = 0.8
SMOOTH_ITERS = 4


def crop_padding(maps: torch.Tensor, padding_size: Sequence[int]) -> torch.Tensor:
    """(1, C, H, W) -> (1, C, H - top - bottom, W - left - right).

    Raises:
        ValueError: padding that is negative or leaves no pixel.
    """
    left, right, top, bottom = (int(v) for v in padding_size)
    height, width = maps.shape[-2:]
    if min(left, right, top, bottom) < 0 or left + right >= width or (
            top + bottom >= height):
        raise ValueError(
            f'padding_size (left, right, top, bottom) = {tuple(padding_size)} '
            f'does not fit a {height}x{width} prediction; it must be the '
            'letterbox padding of the network input.')
    return maps[..., top:height - bottom, left:width - right]


def output_padding(padding_size: Sequence[int], net_shape: Sequence[int],
                   pred_shape: Sequence[int]) -> Tuple[int, int, int, int]:
    """The letterbox padding (left, right, top, bottom) of the network input
    in pixels of a prediction of another size.

    1K heads predict at the input size (padding unchanged); the 4K heads at
    half of it, where the padding is halved. The letterbox must then be a
    whole number of prediction pixels (``DenseResizePad(align=2)`` makes it
    so); a fractional crop would shift the map by part of a pixel.

    Raises:
        ValueError: padding that is not whole pixels of the prediction.
    """
    padding = tuple(int(v) for v in padding_size)
    net_h, net_w = (int(v) for v in tuple(net_shape)[:2])
    pred_h, pred_w = (int(v) for v in tuple(pred_shape)[-2:])
    if (net_h, net_w) == (pred_h, pred_w):
        return padding
    factors = (pred_w / net_w, pred_w / net_w, pred_h / net_h,
               pred_h / net_h)
    scaled = [v * f for v, f in zip(padding, factors)]
    if any(abs(v - round(v)) > 1e-6 for v in scaled):
        raise ValueError(
            f'The letterbox padding (left, right, top, bottom) = {padding} of '
            f'the {net_h}x{net_w} network input is not a whole number of '
            f'pixels of the {pred_h}x{pred_w} prediction; letterbox with '
            f'DenseResizePad(align={round(net_w / pred_w)}) (the 4K configs '
            'do).')
    return tuple(int(round(v)) for v in scaled)


def unflip(maps: torch.Tensor, direction: str, negate_x: bool) -> torch.Tensor:
    """Undo a mirror of the input: flip the map back, negate channel 0 if asked.

    A horizontal mirror of the image maps a camera-frame vector (x, y, z) to
    (-x, y, z), so normals and pointmaps need ``negate_x`` for horizontal
    flips; vertical flips negate y.

    Raises:
        ValueError: a direction other than 'horizontal' / 'vertical'.
    """
    if direction == 'horizontal':
        maps, channel = maps.flip(-1), 0
    elif direction == 'vertical':
        maps, channel = maps.flip(-2), 1
    else:
        raise ValueError(
            f"flip_direction must be 'horizontal' or 'vertical', got "
            f'{direction!r}.')
    if negate_x:
        sign = torch.ones(maps.shape[1], dtype=maps.dtype, device=maps.device)
        sign[channel] = -1
        maps = maps * sign.view(1, -1, 1, 1)
    return maps


def enlarges(maps: torch.Tensor, size: Sequence[int]) -> bool:
    """Whether resizing (..., H, W) ``maps`` to ``size`` grows either side."""
    return int(size[0]) > maps.shape[-2] or int(size[1]) > maps.shape[-1]


def smooth_for_enlargement(maps: torch.Tensor, size: Sequence[int]
                           ) -> torch.Tensor:
    """The official pointmap demo's smoothing before a resize to ``size``.

    When ``size`` is larger than the (N, C, H, W) map in either dimension,
    a 3x3 Gaussian blur (sigma 0.8, reflected borders: torchvision's
    ``gaussian_blur``, which the official demo calls) is applied four times;
    otherwise the map is returned unchanged. It keeps the bilinear
    enlargement from showing the network grid as steps in the point cloud.
    """
    if not enlarges(maps, size):
        return maps
    for _ in range(SMOOTH_ITERS):
        maps = TVF.gaussian_blur(maps, kernel_size=[SMOOTH_KERNEL] * 2,
                                 sigma=[SMOOTH_SIGMA] * 2)
    return maps


def resize_bilinear(maps: torch.Tensor, size: Sequence[int],
                    align_corners: bool = False) -> torch.Tensor:
    """(N, C, H, W) -> (N, C, *size), bilinear without antialiasing (the
    official demos' ``F.interpolate`` call); the same tensor when the size
    already matches."""
    size = tuple(int(v) for v in size)
    if tuple(maps.shape[-2:]) == size:
        return maps
    return F.interpolate(maps, size=size, mode='bilinear',
                         align_corners=align_corners, antialias=False)


def original_shape(meta: dict, maps: torch.Tensor) -> Tuple[int, int]:
    """``ori_shape`` (H, W) of a sample, default the map's own size."""
    return tuple(meta.get('ori_shape') or maps.shape[-2:])[:2]


def to_original_size(maps: torch.Tensor, meta: dict, negate_x: bool,
                     align_corners: bool = False,
                     smooth: bool = False) -> torch.Tensor:
    """Crop the letterbox, undo a flip and resize bilinearly to ``ori_shape``.

    Args:
        maps: (1, C, H, W) prediction in the network frame.
        meta: sample metainfo; reads ``padding_size`` (default no padding)
            in pixels of the network input ``img_shape`` (default: the
            prediction size; a smaller prediction, as the 4K heads make,
            gets the padding scaled by :func:`output_padding`), ``flip`` /
            ``flip_direction`` and ``ori_shape`` (default: the cropped
            size).
        negate_x: the map holds camera-frame vectors (normals, points).
        align_corners: passed to the resize.
        smooth: :func:`smooth_for_enlargement` before the resize (the
            official pointmap demo).

    Returns:
        (C, H_ori, W_ori).
    """
    padding = output_padding(meta.get('padding_size') or (0, 0, 0, 0),
                             meta.get('img_shape') or maps.shape[-2:],
                             maps.shape[-2:])
    maps = crop_padding(maps, padding)
    if meta.get('flip'):
        maps = unflip(maps, meta.get('flip_direction', 'horizontal'), negate_x)
    size = original_shape(meta, maps)
    if smooth:
        maps = smooth_for_enlargement(maps, size)
    return resize_bilinear(maps, size, align_corners)[0]


def letterbox_resize_factor(meta: dict, net_shape: Sequence[int]) -> float:
    """The factor r from original pixels to pixels of the prediction
    (isotropic).

    ``net_shape`` is the prediction's (H, W). The original-to-input factor is
    the ``scale_factor`` metainfo ((w, h) pair or a number) when present, else
    the unpadded input width over the original width; a prediction smaller
    than the input ``img_shape`` (the 4K heads: half) multiplies it by
    W_pred / W_input.
    """
    input_shape = tuple(meta.get('img_shape') or net_shape)[:2]
    to_pred = net_shape[1] / float(input_shape[1])
    factor = meta.get('scale_factor')
    if factor is not None:
        if isinstance(factor, (tuple, list)) or (
                hasattr(factor, 'shape') and getattr(factor, 'ndim', 0) > 0):
            return float(factor[0]) * to_pred
        return float(factor) * to_pred
    left, right, _, _ = meta.get('padding_size') or (0, 0, 0, 0)
    ori_shape = meta.get('ori_shape') or input_shape
    return (input_shape[1] - left - right) / float(ori_shape[1]) * to_pred
