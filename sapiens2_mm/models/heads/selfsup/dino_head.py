"""DINO projection head on the CLS token."""
import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from torch import nn

from ....registry import MODELS


@MODELS.register_module()
class DINOHead(BaseModule):
    """MLP -> bottleneck -> L2 norm -> weight-normalized prototypes.

    The prototype layer is a bias-free linear map whose rows are L2-normalized
    on every call: DINO's ``weight_norm`` layer with its gain fixed to 1
    (``norm_last_layer=True``). While ``freeze_prototypes`` is set (the first
    iterations of training, set by :class:`PretrainScheduleHook`), the
    prototypes receive an exact zero gradient. The parameter stays in the graph
    (DDP needs every parameter used); AdamW's weight decay then only rescales
    the rows, which the normalization cancels.

    Args:
        in_channels: backbone width C.
        hidden_channels: MLP width.
        bottleneck_channels: width before the prototypes.
        num_prototypes: K, size of the output distribution.
        num_layers: linear layers of the MLP (>= 1).
    """

    def __init__(self, in_channels: int, hidden_channels: int = 2048,
                 bottleneck_channels: int = 256, num_prototypes: int = 65536,
                 num_layers: int = 3, init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        if num_layers < 1:
            raise ValueError(f'num_layers must be >= 1, got {num_layers}')
        layers = []
        width = in_channels
        for _ in range(num_layers - 1):
            layers += [nn.Linear(width, hidden_channels), nn.GELU()]
            width = hidden_channels
        layers.append(nn.Linear(width, bottleneck_channels))
        self.mlp = nn.Sequential(*layers)
        self.prototypes = nn.Parameter(
            torch.empty(num_prototypes, bottleneck_channels))
        self.freeze_prototypes = False
        self._reset()

    def _reset(self) -> None:
        for module in self.mlp:
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)
        nn.init.trunc_normal_(self.prototypes, std=0.02)

    def init_weights(self) -> None:
        """Trunc-normal(0.02) weights, zero biases (DINO's init)."""
        super().init_weights()
        self._reset()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C) CLS features -> (B, K) prototype scores (cosines)."""
        z = F.normalize(self.mlp(x), dim=-1, p=2)
        weight = self.prototypes
        if self.freeze_prototypes and torch.is_grad_enabled():
            weight = weight.detach() + 0.0 * weight
        return z @ F.normalize(weight, dim=-1, p=2).t()
