"""8-bit BGR colors of normals and albedo, shared by the drawings
(:mod:`.dense_drawer`) and the keys under them (:mod:`.legends`).

Normals and albedo become 8-bit by truncation (``astype(np.uint8)``) as the
official demos do (``rounding='truncate'``); ``rounding='round'`` rounds to
the nearest level instead.
"""
import numpy as np

#: Default height of the normal color key under a drawing (pixels).
LEGEND_HEIGHT = 24
#: How float colors in [0, 255] become 8-bit (see the module docstring).
ROUNDINGS = ('truncate', 'round')


def to_uint8(levels: np.ndarray, rounding: str = 'truncate') -> np.ndarray:
    """Float color levels -> uint8, clipped to [0, 255], by ``rounding``."""
    if rounding == 'round':
        levels = np.round(levels)
    elif rounding != 'truncate':
        raise ValueError(f'rounding must be one of {ROUNDINGS}, got '
                         f'{rounding!r}.')
    return np.clip(levels, 0, 255).astype(np.uint8)


def normal_to_bgr(normal: np.ndarray, rounding: str = 'truncate'
                  ) -> np.ndarray:
    """(H, W, 3) unit normals -> (H, W, 3) uint8 BGR, ``(n + 1) / 2 * 255``.

    Non-finite components are drawn as 0 (black).
    """
    rgb = (np.nan_to_num(normal, nan=-1.0, posinf=1.0, neginf=-1.0) + 1) / 2
    rgb = to_uint8(rgb * 255, rounding)
    return np.ascontiguousarray(rgb[..., ::-1])


def albedo_to_bgr(albedo: np.ndarray, rounding: str = 'truncate'
                  ) -> np.ndarray:
    """(H, W, 3) RGB albedo in [0, 1] (clamped) -> (H, W, 3) uint8 BGR."""
    rgb = np.clip(np.nan_to_num(albedo), 0.0, 1.0)
    rgb = to_uint8(rgb * 255, rounding)
    return np.ascontiguousarray(rgb[..., ::-1])
