"""Self-supervised pretraining algorithms (import mmpretrain)."""
from .sapiens2_pretrainer import Sapiens2Pretrainer
from .teacher_ema import TeacherEMA, check_teacher_momentum

__all__ = ['Sapiens2Pretrainer', 'TeacherEMA', 'check_teacher_momentum']
