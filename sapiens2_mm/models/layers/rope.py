"""2-D axial rotary position embedding (DINOv3 style, as in Sapiens2).

Numerics follow the official release exactly: the periods buffer, coordinates,
angles and sin/cos are computed in the RoPE dtype (bfloat16 by default), and q/k
are rounded to that dtype around the rotation, also in a float32 model. Skipping
the rounding moves a backbone's output by ~1e-4, enough to fail parity.
"""
import math
from typing import Optional, Tuple

import torch
from torch import nn

ROPE_DTYPES = {'bf16': torch.bfloat16, 'fp32': torch.float32}


class RopePositionEmbedding(nn.Module):
    """Sin/cos tables of a 2-D RoPE for a patch grid.

    Channel layout of a head of size D: the first D/4 angles use the y coordinate,
    the next D/4 the x coordinate, and the table is tiled twice to cover D, so
    rotation pairs are (j, j + D/2) ("rotate half").

    Args:
        head_dim: D, divisible by 4.
        base: period base; ``periods[i] = base ** (2i / (D/2))``.
        min_period: with ``max_period``, use log-spaced periods from
            ``min_period`` to ``max_period`` instead of ``base``.
        max_period: see ``min_period``.
        normalize_coords: ``'separate'`` (each axis to [-1, 1]), ``'max'`` or
            ``'min'`` (both axes by the longer / shorter side).
        dtype: ``'bf16'`` (official) or ``'fp32'``.
    """

    def __init__(self, head_dim: int, base: float = 100.0,
                 min_period: Optional[float] = None,
                 max_period: Optional[float] = None,
                 normalize_coords: str = 'separate', dtype: str = 'bf16'):
        super().__init__()
        if head_dim % 4:
            raise ValueError(
                f'RoPE needs a head dim divisible by 4, got {head_dim}; choose '
                'embed_dims / num_heads as a multiple of 4.')
        if normalize_coords not in ('separate', 'max', 'min'):
            raise ValueError(
                f'normalize_coords must be separate, max or min, got '
                f'{normalize_coords!r}')
        if (min_period is None) != (max_period is None):
            raise ValueError(
                'Set both pos_embed_rope_min_period and max_period, or neither; '
                f'got min={min_period}, max={max_period}.')
        self.head_dim = head_dim
        self.base = base
        self.min_period = min_period
        self.max_period = max_period
        self.normalize_coords = normalize_coords
        self.dtype = ROPE_DTYPES.get(dtype, torch.float32)
        # Persistent: it is part of the official checkpoints (stored as bf16).
        self.register_buffer(
            'periods', torch.empty(head_dim // 4, dtype=self.dtype),
            persistent=True)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Recompute ``periods`` with the official formula, in its dtype."""
        if self.max_period is None:
            exponents = 2 * torch.arange(self.head_dim // 4, dtype=self.dtype)
            periods = self.base**(exponents / (self.head_dim // 2))
        else:
            ratio = self.max_period / self.min_period
            exponents = torch.linspace(
                0, 1, self.head_dim // 4, dtype=self.dtype)
            periods = ratio**exponents / ratio * self.max_period
        self.periods.data = periods.to(self.periods.device)

    def _coords(self, h: int, w: int, device: torch.device) -> torch.Tensor:
        dd = dict(device=device, dtype=self.dtype)
        if self.normalize_coords == 'separate':
            coords_h = torch.arange(0.5, h, **dd) / h
            coords_w = torch.arange(0.5, w, **dd) / w
        else:
            side = max(h, w) if self.normalize_coords == 'max' else min(h, w)
            coords_h = torch.arange(0.5, h, **dd) / side
            coords_w = torch.arange(0.5, w, **dd) / side
        coords = torch.stack(
            torch.meshgrid(coords_h, coords_w, indexing='ij'), dim=-1)
        return 2.0 * coords.flatten(0, 1) - 1.0

    def forward(self, h: int, w: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """Tables for an (h, w) patch grid.

        Returns:
            (sin, cos), each (h*w, head_dim) in the RoPE dtype.
        """
        coords = self._coords(h, w, self.periods.device)
        periods = self.periods.to(self.dtype)
        angles = 2 * math.pi * coords[:, :, None] / periods[None, None, :]
        angles = angles.flatten(1, 2).tile(2)
        return torch.sin(angles), torch.cos(angles)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rope(x: torch.Tensor, rope: Tuple[torch.Tensor,
                                            torch.Tensor]) -> torch.Tensor:
    """Rotate the trailing grid tokens of q or k; leading prefix tokens pass.

    Args:
        x: (B, heads, N, D); the last h*w tokens are patch tokens.
        rope: (sin, cos), each (h*w, D).

    Returns:
        (B, heads, N, D) in ``x.dtype``. The whole tensor, prefix included, is
        rounded to the RoPE dtype and back, as the official code does.
    """
    sin, cos = rope
    out_dtype = x.dtype
    x = x.to(sin.dtype)
    prefix = x.shape[-2] - sin.shape[-2]
    grid = x[:, :, prefix:]
    grid = (grid * cos) + (_rotate_half(grid) * sin)
    return torch.cat((x[:, :, :prefix], grid), dim=-2).to(out_dtype)
