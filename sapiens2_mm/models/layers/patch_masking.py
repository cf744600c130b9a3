"""Random patch masking for masked-image pretraining (MAE-style token dropping).

Masked patches are removed from the encoder input, not replaced by a mask token:
Sapiens2 has no ``mask_token`` parameter, so dropping keeps the official key
layout, and the encoder cost falls with the mask ratio.
"""
import math
from typing import NamedTuple, Optional, Tuple

import torch


class PatchMask(NamedTuple):
    """Which patches the encoder sees.

    Attributes:
        ids_keep: (B, K) long, grid indices (row-major) of the kept patches in
            the order the encoder receives them.
        ids_restore: (B, N) long, ``argsort`` of ``[ids_keep, ids_masked]``:
            gathering ``[kept tokens, mask tokens]`` with it restores grid order.
        mask: (B, N) bool, True where a patch is hidden from the encoder.
    """

    ids_keep: torch.Tensor
    ids_restore: torch.Tensor
    mask: torch.Tensor


def check_mask_ratio(mask_ratio: float) -> float:
    """Return ``mask_ratio`` as a float, raising unless ``0 <= r < 1``."""
    ratio = float(mask_ratio)
    if not 0.0 <= ratio < 1.0:
        raise ValueError(
            f'mask_ratio must be in [0, 1) (the fraction of patches hidden '
            f'from the encoder), got {mask_ratio!r}. MAE uses 0.75; 0 disables '
            'masking.')
    return ratio


def num_kept_patches(num_patches: int, mask_ratio: float) -> int:
    """``floor(N * (1 - r))``, robust to float rounding (N=10, r=0.7 keeps 3).

    Raises:
        ValueError: the ratio is outside [0, 1) or no patch would be kept.
    """
    ratio = check_mask_ratio(mask_ratio)
    kept = math.floor(round(num_patches * (1.0 - ratio), 6))
    if kept < 1:
        raise ValueError(
            f'mask_ratio={mask_ratio} keeps no patch of a {num_patches}-patch '
            'grid; lower the ratio or use larger crops.')
    return kept


def random_patch_mask(batch: int, num_patches: int, mask_ratio: float,
                      device: Optional[torch.device] = None,
                      generator: Optional[torch.Generator] = None
                      ) -> PatchMask:
    """Draw an independent uniform random mask per sample.

    Args:
        batch: B.
        num_patches: N = h * w of the encoder grid.
        mask_ratio: fraction in [0, 1) of patches to hide.
        device: device of the returned tensors.
        generator: optional RNG (a CPU generator when ``device`` is CPU).

    Returns:
        A :class:`PatchMask` with K = ``num_kept_patches(N, r)``; kept indices
        are sorted ascending (grid order), so ratio 0 is the identity.
    """
    kept = num_kept_patches(num_patches, mask_ratio)
    noise = torch.rand(batch, num_patches, generator=generator,
                       device=generator.device if generator else device)
    shuffle = noise.argsort(dim=1)
    ids_keep = shuffle[:, :kept].sort(dim=1).values
    return mask_from_ids_keep(ids_keep.to(device), num_patches)


def mask_from_ids_keep(ids_keep: torch.Tensor, num_patches: int) -> PatchMask:
    """Complete a :class:`PatchMask` from explicit kept indices.

    Args:
        ids_keep: (B, K) long, distinct indices in [0, N) per row.
        num_patches: N.
    """
    batch = ids_keep.shape[0]
    mask = torch.ones(batch, num_patches, dtype=torch.bool,
                      device=ids_keep.device)
    mask.scatter_(1, ids_keep, False)
    ids_masked = (~mask).long().argsort(dim=1, stable=True)
    ids_masked = ids_masked[:, :num_patches - ids_keep.shape[1]]
    ids_restore = torch.cat((ids_keep, ids_masked), dim=1).argsort(dim=1)
    return PatchMask(ids_keep, ids_restore, mask)


def ids_keep_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """(B, N) bool mask (True = hidden) -> (B, K) kept indices, ascending.

    Raises:
        ValueError: rows hide different numbers of patches (the encoder
            batches a fixed K per sample).
    """
    if mask.dim() != 2 or mask.dtype != torch.bool:
        raise ValueError(
            f'mask must be a (B, N) bool tensor (True = hidden patch), got '
            f'{tuple(mask.shape)} {mask.dtype}')
    kept = (~mask).sum(dim=1)
    if (kept != kept[0]).any():
        raise ValueError(
            f'Every sample must keep the same number of patches, got '
            f'{kept.tolist()}; draw masks with random_patch_mask.')
    return (~mask).long().argsort(dim=1, descending=True,
                                  stable=True)[:, :int(kept[0])]


def gather_tokens(tokens: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(B, N, C) tokens, (B, K) indices -> (B, K, C)."""
    return torch.gather(
        tokens, 1, ids[..., None].expand(-1, -1, tokens.shape[-1]))


def gather_rope(rope: Tuple[torch.Tensor, torch.Tensor],
                ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Full-grid RoPE tables (N, D) -> per-sample tables (B, 1, K, D).

    Rows are copied, not recomputed, so each kept token is rotated by exactly
    the angles it has in the unmasked forward. The singleton axis broadcasts
    over attention heads.
    """
    return tuple(table[ids][:, None] for table in rope)
