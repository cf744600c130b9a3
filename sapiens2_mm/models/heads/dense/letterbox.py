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
        meta: sample metainfo; reads ``padding_size`` (default no padding),
            ``flip`` / ``flip_direction`` and ``ori_shape`` (default: the
            cropped size).
        negate_x: the map holds camera-frame vectors (normals, points).
        align_corners: passed to the resize.
        smooth: :func:`smooth_for_enlargement` before the resize (the
            official pointmap demo).

    Returns:
        (C, H_ori, W_ori).
    """
    maps = crop_padding(maps, meta.get('padding_size') or (0, 0, 0, 0))
    if meta.get('flip'):
        maps = unflip(maps, meta.get('flip_direction', 'horizontal'), negate_x)
    size = original_shape(meta, maps)
    if smooth:
        maps = smooth_for_enlargement(maps, size)
    return resize_bilinear(maps, size, align_corners)[0]


def letterbox_resize_factor(meta: dict, net_shape: Sequence[int]) -> float:
    """The factor r from original to letterboxed pixels (isotropic).

    ``scale_factor`` metainfo ((w, h) pair or a number) when present, else the
    unpadded network width over the original width.
    """
    factor = meta.get('scale_factor')
    if factor is not None:
        if isinstance(factor, (tuple, list)) or (
                hasattr(factor, 'shape') and getattr(factor, 'ndim', 0) > 0):
            return float(factor[0])
        return float(factor)
    left, right, _, _ = meta.get('padding_size') or (0, 0, 0, 0)
    ori_shape = meta.get('ori_shape') or net_shape
    return (net_shape[1] - left - right) / float(ori_shape[1])
