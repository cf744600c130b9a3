"""RMS normalization layers."""
import torch
from torch import nn


def build_rms_norm(num_features: int, eps: float = 1e-6) -> nn.RMSNorm:
    """RMSNorm over the last axis with a learnable weight (init 1) and no bias.

    Sapiens2 uses it for the block pre-norms (``ln1``/``ln2``), the QK-norm
    (over the head dimension) and the final norm.
    """
    return nn.RMSNorm(num_features, eps=eps, elementwise_affine=True)


#: Memory layout of :class:`RMSNorm2d`'s output (see there).
RMS_NORM_LAYOUTS = ('official', 'channels_last')


class RMSNorm2d(nn.Module):
    """RMSNorm over the channel axis of an NCHW map, applied at every pixel.

    Used by the albedo decoder. The parameter lives at ``norm.weight`` to keep the
    official key layout.

    ``layout`` picks the memory layout, which decides the float32 kernels of
    the convolution that follows (the values differ by ~1e-5):
    ``'official'`` (default) copies to channels-last and back to
    NCHW-contiguous, as the official ``RMSNorm2d``: the albedo head then
    equals the official outputs exactly. ``'channels_last'`` normalizes a
    permuted view and returns a channels-last view: no copies, and on CPU
    the next convolution runs its channels-last kernel (measured on 2 cores:
    a 0.4b albedo head at 1024x768 took 24 s instead of 37 s).

    Args:
        num_channels: C.
        eps: added to the mean square.
        layout: one of :data:`RMS_NORM_LAYOUTS`.
    """

    def __init__(self, num_channels: int, eps: float = 1e-6,
                 layout: str = 'official'):
        super().__init__()
        self.norm = build_rms_norm(num_channels, eps)
        if layout not in RMS_NORM_LAYOUTS:
            raise ValueError(f'RMSNorm2d layout must be one of '
                             f'{RMS_NORM_LAYOUTS}, got {layout!r}.')
        self.layout = layout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, C, H, W)."""
        if self.layout == 'channels_last':
            return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = self.norm(x.movedim(1, -1).contiguous())
        return x.movedim(-1, 1).contiguous()
