"""UDP heatmap codec of Sapiens2 pose (docs/pose.md), on top of mmpose's.

Encoding is mmpose's ``UDPHeatmap.encode`` unchanged (the official codec is the
same: Gaussian of radius 3 sigma at ``kp / ((input - 1) / (heatmap - 1))``).
Two things differ, both on the decode side:

* ``decode_mapping``: ``'official'`` (default, the official and mmpose formula
  ``kp_hm / (hm - 1) * input``) or ``'consistent'`` (``kp_hm * (input - 1) /
  (hm - 1)``, the exact inverse of the encode scale). The official formula puts a
  perfect heatmap up to 1 input pixel off (mean 0.5 px at 1024x768); keep it to
  reproduce official checkpoints' numbers.
* :meth:`batch_decode` decodes a whole batch at once in torch with an exact
  local DARK refinement (see :mod:`.dark_udp`), >= 10x faster than mmpose's
  per-person numpy loop; mmpose's heads use it automatically.

Registration: mmpose's ``KEYPOINT_CODECS`` registry has no parent, so a codec in
our ``TASK_UTILS`` would be invisible to mmpose's heads and ``GenerateTarget``.
The class is therefore registered in mmpose's ``KEYPOINT_CODECS`` (as
``Sapiens2UDPHeatmap``) and also in our ``TASK_UTILS``.
"""
from typing import List, Optional, Tuple, Union

import numpy as np
import torch
from mmpose.codecs import UDPHeatmap
from mmpose.registry import KEYPOINT_CODECS

from ..registry import TASK_UTILS
from .dark_udp import decode_udp_heatmaps

MAPPINGS = ('official', 'consistent')


@TASK_UTILS.register_module()
@KEYPOINT_CODECS.register_module()
class Sapiens2UDPHeatmap(UDPHeatmap):
    """UDP Gaussian heatmaps with DARK-UDP decoding (Huang et al., CVPR 2020).

    Args:
        input_size: crop size (w, h), e.g. (768, 1024).
        heatmap_size: heatmap size (W, H), e.g. (192, 256).
        sigma: Gaussian sigma in heatmap pixels (official: 6 at 192x256).
        blur_kernel_size: DARK blur kernel (official: 11).
        decode_mapping: ``'official'`` or ``'consistent'`` (see module doc).
        heatmap_type: accepted so that mmpose ``UDPHeatmap`` configs work
            unchanged; only mmpose's default ``'gaussian'`` is supported (the
            DARK-UDP decoding here needs Gaussian heatmaps).
        radius_factor: mmpose's ``UDPHeatmap`` argument, used only by
            ``'combined'`` heatmaps; accepted and unused.
    """

    def __init__(self,
                 input_size: Tuple[int, int],
                 heatmap_size: Tuple[int, int],
                 sigma: float = 2.,
                 blur_kernel_size: int = 11,
                 decode_mapping: str = 'official',
                 heatmap_type: str = 'gaussian',
                 radius_factor: float = 0.0546875) -> None:
        if heatmap_type != 'gaussian':
            raise ValueError(
                f'{type(self).__name__} supports heatmap_type=\'gaussian\' '
                f'only, got {heatmap_type!r}: its decoding is DARK-UDP on '
                'Gaussian heatmaps. For \'combined\' (label + offset maps) use '
                'mmpose\'s UDPHeatmap (type=\'UDPHeatmap\').')
        super().__init__(input_size=tuple(input_size),
                         heatmap_size=tuple(heatmap_size),
                         heatmap_type=heatmap_type, sigma=sigma,
                         radius_factor=radius_factor,
                         blur_kernel_size=blur_kernel_size)
        if decode_mapping not in MAPPINGS:
            raise ValueError(
                f'decode_mapping must be one of {MAPPINGS}, got '
                f'{decode_mapping!r}.')
        self.decode_mapping = decode_mapping

    def decode(self, encoded: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Decode one instance.

        Args:
            encoded: heatmaps (K, H, W).

        Returns:
            keypoints (1, K, 2) in crop pixels and scores (1, K).
        """
        heatmaps = torch.as_tensor(np.asarray(encoded, dtype=np.float32))[None]
        kps, scores = self._decode_tensor(heatmaps)
        return kps[0][None], scores[0][None]

    def reference_decode(self,
                         encoded: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """mmpose's ``UDPHeatmap.decode`` with this codec's mapping applied.

        The slow per-person path, kept to test :meth:`batch_decode` against.
        """
        kps, scores = super().decode(encoded)
        if self.decode_mapping == 'consistent':
            size = np.asarray(self.input_size, dtype=np.float32)
            kps = kps * (size - 1) / size
        return kps, scores

    def batch_decode(
        self, batch_encoded: Union[torch.Tensor, np.ndarray]
    ) -> Tuple[List[np.ndarray], List[np.ndarray]]:
        """Decode a batch of single-instance heatmaps at once.

        Args:
            batch_encoded: (B, K, H, W) tensor (any device) or array.

        Returns:
            lists of B keypoints (1, K, 2) and B scores (1, K), numpy.
        """
        heatmaps = torch.as_tensor(batch_encoded)
        kps, scores = self._decode_tensor(heatmaps)
        return ([k[None] for k in kps], [s[None] for s in scores])

    def _decode_tensor(
            self, heatmaps: torch.Tensor,
            input_size: Optional[Tuple[int, int]] = None):
        with torch.no_grad():
            kps, scores = decode_udp_heatmaps(
                heatmaps.float(), input_size or self.input_size,
                kernel_size=self.blur_kernel_size,
                mapping=self.decode_mapping)
        return kps.cpu().numpy(), scores.float().cpu().numpy()
