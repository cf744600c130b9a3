"""RMS normalisation layers."""
import torch
from torch import nn


def build_rms_norm(num_features: int, eps: float = 1e-6) -> nn.RMSNorm:
    """RMSNorm over the last axis with a learnable weight (init 1) and no bias.

    Sapiens2 uses it for the block pre-norms (``ln1``/``ln2``), the QK-norm
    (over the head dimension) and the final norm.
    """
    return nn.RMSNorm(num_features, eps=eps, elementwise_affine=True)


class RMSNorm2d(nn.Module):
    """RMSNorm over the channel axis of an NCHW map, applied at every pixel.

    Used by the albedo decoder. The parameter lives at ``norm.weight`` to keep the
    official key layout.

    Args:
        num_channels: C.
        eps: added to the mean square.
    """

    def __init__(self, num_channels: int, eps: float = 1e-6):
        super().__init__()
        self.norm = build_rms_norm(num_channels, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, C, H, W)."""
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
