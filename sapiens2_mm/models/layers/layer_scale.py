"""Per-channel residual-branch scaling (CaiT LayerScale)."""
import torch
from torch import nn


class LayerScale(nn.Module):
    """Multiply the last axis by a learnable vector ``weight`` (key ``gamma.weight``).

    Args:
        dim: size of the last axis.
        init_value: initial value of every entry (Sapiens2: 1e-4).
    """

    def __init__(self, dim: int, init_value: float = 1e-4):
        super().__init__()
        self.init_value = init_value
        self.weight = nn.Parameter(torch.full((dim, ), float(init_value)))

    def reset_parameters(self) -> None:
        nn.init.constant_(self.weight, self.init_value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., dim) -> (..., dim)."""
        return x * self.weight
