"""DINO CLS self-distillation loss with Sinkhorn-Knopp or centred teachers."""
from typing import List, Sequence

import torch
import torch.nn.functional as F
from mmengine import dist
from torch import nn

from ....registry import MODELS

TEACHER_NORMS = ('sinkhorn', 'centering')


def _all_reduce_sum(x: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() > 1:
        dist.all_reduce(x, op='sum')
    return x


@torch.no_grad()
def sinkhorn_knopp(logits: torch.Tensor, temperature: float,
                   num_iterations: int = 3) -> torch.Tensor:
    """Balanced teacher assignments (SwAV / DINOv2), in float32.

    ``Q = exp(logits / T)`` is alternately scaled so that every prototype gets
    the same total mass over the global batch and every sample sums to 1. Sums
    over the batch are all-reduced, so B below is the global batch.

    Args:
        logits: (B_local, K) teacher scores.
        temperature: teacher temperature T.
        num_iterations: alternating normalizations (3 in DINOv2).

    Returns:
        (B_local, K): rows sum to 1; over the global batch each column sums to
        about B / K (exactly after convergence).
    """
    logits = logits.float()
    # A shift shared by all processes cancels in the normalization and keeps
    # exp() finite at low temperatures.
    shift = logits.max().detach().clone()
    if dist.get_world_size() > 1:
        dist.all_reduce(shift, op='max')
    q = torch.exp((logits - shift) / temperature).t()
    num_prototypes = q.shape[0]
    total_batch = torch.tensor(float(q.shape[1]), device=q.device)
    total_batch = _all_reduce_sum(total_batch)
    q /= _all_reduce_sum(q.sum())
    for _ in range(num_iterations):
        q /= _all_reduce_sum(q.sum(dim=1, keepdim=True))
        q /= num_prototypes
        q /= q.sum(dim=0, keepdim=True)
        q /= total_batch
    q *= total_batch
    return q.t()


@MODELS.register_module()
class DINOClsLoss(nn.Module):
    """Cross-entropy between teacher and student CLS distributions.

    Every student crop is scored against every teacher global crop except its
    own view; the sum is divided by the number of pairs
    ``n_g * (n_g - 1) + n_g * n_l`` (DINOv2), each pair term being a batch mean.

    Args:
        out_dim: K, prototypes of the head.
        student_temp: student softmax temperature.
        teacher_temp: teacher temperature (scheduled by
            :class:`PretrainScheduleHook`).
        teacher_norm: ``'sinkhorn'`` (DINOv2 / v3 default) or ``'centering'``
            (DINO's softmax with an EMA centre).
        center_momentum: EMA momentum of the centre (``'centering'``).
        sinkhorn_iterations: Sinkhorn-Knopp iterations.
    """

    def __init__(self, out_dim: int, student_temp: float = 0.1,
                 teacher_temp: float = 0.07, teacher_norm: str = 'sinkhorn',
                 center_momentum: float = 0.9, sinkhorn_iterations: int = 3):
        super().__init__()
        if teacher_norm not in TEACHER_NORMS:
            raise ValueError(
                f'teacher_norm must be one of {TEACHER_NORMS}, got '
                f'{teacher_norm!r}')
        if not 0.0 <= center_momentum <= 1.0:
            raise ValueError(
                f'center_momentum must be in [0, 1], got {center_momentum}')
        self.student_temp = student_temp
        self.teacher_temp = teacher_temp
        self.teacher_norm = teacher_norm
        self.center_momentum = center_momentum
        self.sinkhorn_iterations = sinkhorn_iterations
        # Saved in checkpoints so that a resumed run continues the same centre.
        self.register_buffer('center', torch.zeros(1, out_dim))

    @torch.no_grad()
    def teacher_targets(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, K) teacher scores of all global crops -> (B, K) targets.

        With ``'centering'`` the centre is updated afterwards with the batch
        mean (all-reduced over processes), as in DINO.
        """
        if self.teacher_norm == 'sinkhorn':
            return sinkhorn_knopp(logits, self.teacher_temp,
                                  self.sinkhorn_iterations)
        probs = F.softmax((logits.float() - self.center) / self.teacher_temp,
                          dim=-1)
        self.update_center(logits)
        return probs

    @torch.no_grad()
    def update_center(self, logits: torch.Tensor) -> None:
        """``c <- m c + (1 - m) mean_b(logits)`` over the global batch."""
        batch_sum = _all_reduce_sum(logits.float().sum(dim=0, keepdim=True))
        count = _all_reduce_sum(
            torch.tensor(float(logits.shape[0]), device=logits.device))
        self.center.mul_(self.center_momentum).add_(
            batch_sum / count, alpha=1.0 - self.center_momentum)

    def forward(self, student_logits: Sequence[torch.Tensor],
                teacher_targets: Sequence[torch.Tensor],
                num_global: int) -> torch.Tensor:
        """Loss over cross-view pairs.

        Args:
            student_logits: per crop (B, K); the first ``num_global`` are the
                global crops in the same order as ``teacher_targets``.
            teacher_targets: per global crop (B, K) probabilities.
            num_global: n_g.

        Returns:
            Scalar loss.
        """
        terms: List[torch.Tensor] = []
        for s_index, logits in enumerate(student_logits):
            log_probs = F.log_softmax(logits.float() / self.student_temp, -1)
            for t_index, target in enumerate(teacher_targets):
                if s_index < num_global and s_index == t_index:
                    continue
                terms.append(-(target * log_probs).sum(dim=-1).mean())
        if not terms:
            raise ValueError(
                'The DINO loss needs >= 2 global crops or >= 1 local crop; '
                f'got {num_global} global and '
                f'{len(student_logits) - num_global} local crops.')
        return torch.stack(terms).sum() / len(terms)
