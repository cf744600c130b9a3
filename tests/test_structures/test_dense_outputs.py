"""The dense map declarations and what reads them at the bottom floors."""
import numpy as np
import pytest

from sapiens2_mm.apis import DenseResult
from sapiens2_mm.datasets.dense.transforms.fields import (
    flip_field,
    present_fields,
    resize_field,
)
from sapiens2_mm.structures import (
    DenseField,
    declare_dense_task,
    dense_field,
    dense_outputs,
    dense_target_fields,
    forget_dense_task,
)


def test_the_shipped_tasks_declare_their_maps():
    assert dense_target_fields() == ('gt_normal', 'gt_pointmap', 'gt_depth',
                                     'gt_albedo', 'gt_mask')
    assert [f.name for f in dense_outputs('pointmap').fields] == [
        'pointmap', 'depth']
    assert [f.name for f in dense_outputs('pointmap').fields
            if f.coloring is not None] == ['depth']
    assert dense_field('pred_normal').flip == 'negate_x'
    assert dense_field('gt_albedo').resize == 'bilinear'
    assert dense_field('depth').channels == 1
    assert dense_field('gt_mask') is None and dense_field('seg') is None
    with pytest.raises(KeyError, match="No dense task 'seg'"):
        dense_outputs('seg')


def test_transforms_follow_the_declared_rules():
    value = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    normal = flip_field('gt_normal', value)
    np.testing.assert_array_equal(normal[..., 0], -value[:, ::-1, 0])
    albedo = flip_field('gt_albedo', value)
    np.testing.assert_array_equal(albedo, value[:, ::-1])
    # bilinear for albedo, nearest for the others
    small = np.array([[0.0, 1.0]], np.float32)
    assert resize_field('gt_albedo', small, (4, 1))[0, 1] not in (0.0, 1.0)
    assert set(resize_field('gt_depth', small, (4, 1))[0]) == {0.0, 1.0}
    assert present_fields({'gt_depth': small, 'gt_normal': None,
                           'gt_mask': small}) == ['gt_depth', 'gt_mask']


def test_a_new_declaration_is_read_and_conflicts_are_refused():
    field = DenseField('toy_map', channels=1, flip='negate_x')
    try:
        declare_dense_task('toy', [field])
        declare_dense_task('toy', [field])  # the same again: a no-op
        assert dense_target_fields()[-2:] == ('gt_toy_map', 'gt_mask')
        value = np.ones((2, 2, 3), np.float32)
        assert flip_field('gt_toy_map', value)[0, 0, 0] == -1
        with pytest.raises(ValueError, match='already declared'):
            declare_dense_task('toy', [DenseField('toy_map', channels=2)])
        with pytest.raises(ValueError, match="map 'toy_map' is already"):
            declare_dense_task('toy2', [DenseField('toy_map', channels=3)])
        result = DenseResult('a', (2, 2), maps={'toy_map': value[..., 0]})
        assert result.toy_map.shape == (2, 2) and result.normal is None
    finally:
        forget_dense_task('toy')
    assert dense_field('toy_map') is None
    with pytest.raises(AttributeError, match='no attribute'):
        assert DenseResult('a', (2, 2)).toy_map is None


def test_declarations_are_checked():
    with pytest.raises(ValueError, match='flip must be one of'):
        DenseField('x', flip='rotate')
    with pytest.raises(ValueError, match='resize must be one of'):
        DenseField('x', resize='cubic')
    with pytest.raises(ValueError, match='validity mask'):
        DenseField('mask')
