"""Per-iteration schedules of the Sapiens2 pretraining algorithm."""
import math
from typing import Optional

from mmengine.hooks import Hook

from ...registry import HOOKS


def cosine_to(start: float, end: float, step: int, total: int) -> float:
    """Cosine from ``start`` at step 0 to ``end`` at ``step >= total``."""
    if total <= 0 or step >= total:
        return end
    return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * step / total))


def linear_warmup(start: float, end: float, step: int, total: int) -> float:
    """Linear from ``start`` at step 0 to ``end`` at ``step >= total``."""
    if total <= 0 or step >= total:
        return end
    return start + (end - start) * step / total


@HOOKS.register_module()
class PretrainScheduleHook(Hook):
    """Teacher momentum, teacher temperature and prototype freezing.

    Set before every training iteration on the unwrapped model
    (``get_ori_model``), from the iteration counter, so they resume exactly:

    * teacher momentum (DINO convention): cosine from ``momentum_start`` to
      ``momentum_end`` over ``momentum_iters`` (default: the whole run);
    * teacher temperature: linear from ``teacher_temp_start`` to
      ``teacher_temp_end`` over ``teacher_temp_warmup_iters``, then constant;
    * prototypes of the DINO head get zero gradients while
      ``iter < freeze_prototypes_iters``.

    Values are logged as ``teacher_momentum`` and ``teacher_temp``.

    Args:
        momentum_start: DINO m at iteration 0 (0.992 DINOv2).
        momentum_end: m at the end (1.0).
        momentum_iters: length of the cosine; None = ``runner.max_iters``.
        teacher_temp_start: 0.04.
        teacher_temp_end: 0.07.
        teacher_temp_warmup_iters: warm-up length (DINOv2: 30 epochs).
        freeze_prototypes_iters: iterations with frozen prototypes (DINOv2:
            one epoch).
    """

    priority = 'NORMAL'

    def __init__(self, momentum_start: float = 0.992,
                 momentum_end: float = 1.0,
                 momentum_iters: Optional[int] = None,
                 teacher_temp_start: float = 0.04,
                 teacher_temp_end: float = 0.07,
                 teacher_temp_warmup_iters: int = 0,
                 freeze_prototypes_iters: int = 0):
        from ...models.selfsup.teacher_ema import check_teacher_momentum
        self.momentum_start = check_teacher_momentum(momentum_start)
        self.momentum_end = check_teacher_momentum(momentum_end)
        for name, value in (('teacher_temp_start', teacher_temp_start),
                            ('teacher_temp_end', teacher_temp_end)):
            if value <= 0:
                raise ValueError(f'{name} must be > 0, got {value}')
        self.momentum_iters = momentum_iters
        self.teacher_temp_start = teacher_temp_start
        self.teacher_temp_end = teacher_temp_end
        self.teacher_temp_warmup_iters = teacher_temp_warmup_iters
        self.freeze_prototypes_iters = freeze_prototypes_iters

    def values_at(self, step: int, max_iters: int) -> dict:
        """The three scheduled values at iteration ``step`` of ``max_iters``."""
        total = self.momentum_iters if self.momentum_iters else max_iters
        return dict(
            teacher_momentum=cosine_to(self.momentum_start, self.momentum_end,
                                       step, total),
            teacher_temp=linear_warmup(self.teacher_temp_start,
                                       self.teacher_temp_end, step,
                                       self.teacher_temp_warmup_iters),
            freeze_prototypes=step < self.freeze_prototypes_iters)

    def apply(self, model, step: int, max_iters: int) -> dict:
        """Write the values for ``step`` into ``model`` (a Sapiens2Pretrainer)."""
        values = self.values_at(step, max_iters)
        model.teacher.teacher_momentum = values['teacher_momentum']
        model.dino_loss.teacher_temp = values['teacher_temp']
        # Under FSDP the head is wrapped (a unit of its own): an attribute set
        # on the wrapper would not reach the DINOHead inside it.
        for module in model.dino_head.modules():
            if hasattr(module, 'freeze_prototypes'):
                module.freeze_prototypes = values['freeze_prototypes']
        return values

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        """Set this iteration's values and log them."""
        # mmpretrain only when pretraining; the engine package stays light.
        from mmpretrain.utils import get_ori_model
        model = get_ori_model(runner.model)
        values = self.apply(model, runner.iter, runner.max_iters)
        for key in ('teacher_momentum', 'teacher_temp'):
            runner.message_hub.update_scalar(f'train/{key}', values[key])
