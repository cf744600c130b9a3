"""EMA teacher with the momentum written in DINO's convention.

DINO's teacher momentum m is the weight of the *teacher*:
``teacher <- m * teacher + (1 - m) * student``. mmengine's
``ExponentialMovingAverage.momentum`` is the weight of the *student*, so
``mmengine_momentum = 1 - m`` (DINO's 0.996 is mmengine's 0.004).
"""
from typing import Dict

import torch
from mmengine.model import ExponentialMovingAverage
from torch import nn

# Inserted into parameter names by FSDP and activation-checkpoint wrappers.
WRAPPER_NAMES = ('_fsdp_wrapped_module.', '_checkpoint_wrapped_module.',
                 '_orig_mod.')


def _plain_name(name: str) -> str:
    for part in WRAPPER_NAMES:
        name = name.replace(part, '')
    return name


def named_float_parameters(module: nn.Module) -> Dict[str, torch.Tensor]:
    """``named_parameters`` with wrapper names removed (FSDP, checkpointing)."""
    return {_plain_name(k): v for k, v in module.named_parameters()}


def check_teacher_momentum(value: float) -> float:
    """Return ``value`` as a float, raising unless it lies in [0, 1]."""
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(
            f'teacher momentum (DINO convention: the teacher\'s weight in '
            f'teacher <- m * teacher + (1 - m) * student) must be in [0, 1], '
            f'got {value}. Typical: 0.992 -> 1.0 (DINOv2), 0.994 (DINOv3).')
    return value


class TeacherEMA(ExponentialMovingAverage):
    """mmengine EMA whose schedule is set as ``teacher_momentum`` (DINO's m).

    The averaged copy lives in ``module`` with ``requires_grad=False``; it is a
    submodule of the algorithm, so it is saved in checkpoints, restored on
    resume and moved with the model, and optimizer constructors that skip
    frozen parameters never see it. The first :meth:`update_parameters` call
    copies the student (mmengine's ``steps == 0`` rule): the teacher starts as
    the initialized student.

    Args:
        model: the student parts to average.
        teacher_momentum: DINO-convention m in [0, 1].
    """

    def __init__(self, model: nn.Module, teacher_momentum: float = 0.992):
        check_teacher_momentum(teacher_momentum)
        # mmengine asserts 0 < momentum < 1 at construction only; the value
        # is replaced right away and may reach 0 (m = 1) later.
        super().__init__(model, momentum=0.5)
        self.teacher_momentum = teacher_momentum

    @property
    def teacher_momentum(self) -> float:
        """DINO's m = 1 - mmengine's ``momentum``."""
        return 1.0 - self.momentum

    @teacher_momentum.setter
    def teacher_momentum(self, value: float) -> None:
        self.momentum = 1.0 - check_teacher_momentum(value)

    @torch.no_grad()
    def update_parameters(self, model: nn.Module) -> None:
        """EMA step (a plain copy at ``steps == 0``), matched by plain name.

        mmengine matches parameters by the names they had at construction;
        FSDP and activation-checkpoint wrappers applied afterwards rename
        them (``blocks.0._fsdp_wrapped_module.attn...``). Both sides are
        looked up at every call with wrapper names removed; under FSDP the
        teacher and student are wrapped alike, so their local shards line up.
        """
        source = named_float_parameters(model)
        target = named_float_parameters(self.module)
        if source.keys() != target.keys():
            missing = sorted(set(target) ^ set(source))[:5]
            raise RuntimeError(
                f'Teacher and student parameters differ, e.g. {missing}')
        first = int(self.steps) == 0
        if first or int(self.steps) % self.interval == 0:
            for name, avg in target.items():
                src = source[name].detach().to(avg.device)
                if avg.shape != src.shape:
                    # e.g. an FSDP unit holding the teacher but not its
                    # student twin: the shards would not line up
                    raise RuntimeError(
                        f'EMA teacher {name}: local shape {tuple(avg.shape)} '
                        f'but the student has {tuple(src.shape)}; under FSDP '
                        'the teacher and student parts must be twin units '
                        '(Sapiens2FSDPStrategy wraps them so).')
                if first:
                    avg.copy_(src)
                elif avg.dtype.is_floating_point:
                    self.avg_func(avg.data, src, int(self.steps))
        for b_avg, b_src in zip(self.module.buffers(), model.buffers()):
            b_avg.data.copy_(b_src.data.to(b_avg.device))
        self.steps += 1

    def train(self, mode: bool = True):
        """The teacher always runs in eval mode (no dropout; frozen stats)."""
        return super().train(False)

    @torch.no_grad()
    def forward(self, *args, **kwargs):
        """Forward of the averaged copy, without autograd."""
        return self.module(*args, **kwargs)
