"""KoLeo regulariser (Sablayrolles et al. 2019, as used by DINOv2)."""
import torch
import torch.nn.functional as F
from torch import nn

from ....registry import MODELS


def koleo_loss(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``-mean_i log(min_{j != i} ||x_i - x_j|| + eps)`` on L2-normalized rows.

    Args:
        x: (B, D) features, B >= 2.

    Returns:
        Scalar. Computed per process (DINOv2 does not gather across GPUs).
    """
    if x.shape[0] < 2:
        raise ValueError(
            f'KoLeo needs at least 2 samples per crop, got {x.shape[0]}; '
            'raise the batch size or set koleo_loss_weight=0.')
    x = F.normalize(x.float(), dim=-1, p=2, eps=eps)
    with torch.no_grad():
        dots = x @ x.t()
        dots.fill_diagonal_(-2.0)
        neighbour = dots.argmax(dim=1)
    distances = F.pairwise_distance(x, x[neighbour], p=2, eps=eps)
    return -torch.log(distances + eps).mean()


@MODELS.register_module()
class KoLeoLoss(nn.Module):
    """Module form of :func:`koleo_loss` with a weight."""

    def __init__(self, loss_weight: float = 0.1, eps: float = 1e-8):
        super().__init__()
        self.loss_weight = loss_weight
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, D) -> weighted scalar."""
        return self.loss_weight * koleo_loss(x, self.eps)
