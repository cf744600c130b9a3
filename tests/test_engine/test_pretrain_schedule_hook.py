"""Schedules of PretrainScheduleHook at iterations 0, T/2 and T."""
import pytest

from sapiens2_mm.engine.hooks import PretrainScheduleHook
from sapiens2_mm.registry import MODELS
from tests.test_models.test_selfsup.test_sapiens2_pretrainer import (
    tiny_pretrainer_cfg,
)


def test_values_at_start_middle_end():
    hook = PretrainScheduleHook(momentum_start=0.992, momentum_end=1.0,
                                teacher_temp_start=0.04, teacher_temp_end=0.07,
                                teacher_temp_warmup_iters=100,
                                freeze_prototypes_iters=10)
    start, middle, end = (hook.values_at(step, 200) for step in (0, 100, 200))
    # cosine: m(t) = 1 - (1 - 0.992) * (1 + cos(pi t / T)) / 2
    assert start['teacher_momentum'] == pytest.approx(0.992)
    assert middle['teacher_momentum'] == pytest.approx(0.996)
    assert end['teacher_momentum'] == pytest.approx(1.0)
    assert hook.values_at(50, 200)['teacher_momentum'] == pytest.approx(
        1 - 0.008 * (1 + 2**-0.5) / 2)
    # temperature: linear over 100 iterations, then flat.
    assert start['teacher_temp'] == pytest.approx(0.04)
    assert hook.values_at(50, 200)['teacher_temp'] == pytest.approx(0.055)
    assert middle['teacher_temp'] == end['teacher_temp'] == pytest.approx(0.07)
    assert start['freeze_prototypes'] and hook.values_at(9, 200)[
        'freeze_prototypes']
    assert not hook.values_at(10, 200)['freeze_prototypes']


def test_apply_writes_into_the_model():
    model = MODELS.build(tiny_pretrainer_cfg())
    hook = PretrainScheduleHook(momentum_start=0.99, teacher_temp_start=0.05,
                                teacher_temp_end=0.05,
                                freeze_prototypes_iters=1)
    hook.apply(model, 0, 10)
    assert model.teacher.momentum == pytest.approx(0.01)
    assert model.dino_loss.teacher_temp == 0.05
    assert model.dino_head.freeze_prototypes
    hook.apply(model, 10, 10)
    assert model.teacher.momentum == pytest.approx(0.0, abs=1e-12)
    assert not model.dino_head.freeze_prototypes


@pytest.mark.parametrize('kwargs,match', [
    (dict(momentum_start=1.2), r'\[0, 1\]'),
    (dict(momentum_end=-0.5), r'\[0, 1\]'),
    (dict(teacher_temp_start=0.0), 'teacher_temp_start must be > 0'),
])
def test_bad_hook_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PretrainScheduleHook(**kwargs)
