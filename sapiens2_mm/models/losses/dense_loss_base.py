"""Common shape of the dense loss modules: weight, name, call signature."""
import torch
from torch import nn


class DenseLossBase(nn.Module):
    """A weighted, named dense loss term.

    Every dense loss is called by its head as
    ``loss(pred, target, valid_mask, **context)`` with (B, C, H, W) ``pred`` and
    ``target``, a (B, 1, H, W) ``valid_mask`` and the task context (pointmap:
    ``mean_depth`` (B, 1, 1, 1), ``intrinsics`` (B, 3, 3), ``gt_scale`` (B, 1),
    ``pred_scale`` (B, 1)); each term reads the context entries it needs and
    ignores the others.

    Args:
        loss_weight: multiplier of the value.
        loss_name: key in the head's loss dict; names containing ``loss`` are
            summed into the total by mmengine.
    """

    def __init__(self, loss_weight: float = 1.0, loss_name: str = 'loss'):
        super().__init__()
        self.loss_weight = float(loss_weight)
        self._loss_name = loss_name

    @property
    def loss_name(self) -> str:
        """Name of the term in the loss dict."""
        return self._loss_name

    @staticmethod
    def require(context: dict, key: str, owner: str) -> torch.Tensor:
        """Fetch ``context[key]`` or raise a ValueError naming the loss."""
        value = context.get(key)
        if value is None:
            raise ValueError(
                f'{owner} needs {key!r}, which the head did not pass (got '
                f'{sorted(k for k, v in context.items() if v is not None)}). '
                'Use it in the head it was written for.')
        return value
