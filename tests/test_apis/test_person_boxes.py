"""Bbox files: finite boxes only; score threshold and off-image boxes."""
import json

import numpy as np
import pytest

from sapiens2_mm.apis import BoxFile, Frame, WholeImageBoxes


def _frame(name='a.jpg', h=100, w=200):
    return Frame(name, np.zeros((h, w, 3), np.uint8))


@pytest.mark.parametrize('bad', ['NaN', 'Infinity', '1e400'])
def test_non_finite_boxes_are_refused(tmp_path, bad):
    path = tmp_path / 'boxes.json'
    path.write_text('{"a.jpg": [[0, 0, %s, 10]]}' % bad)
    with pytest.raises(ValueError, match="non-finite.*'a.jpg'|'a.jpg'.*non-finite"):
        BoxFile(str(path))


def test_threshold_and_outside_boxes_are_dropped_and_counted(tmp_path):
    path = tmp_path / 'boxes.json'
    path.write_text(json.dumps({'a.jpg': [
        [10, 10, 50, 50, 0.9],      # kept
        [10, 10, 50, 50, 0.2],      # below --bbox-thr 0.3
        [300, 10, 400, 50],         # right of the 200-px image
        [-80, -80, -1, -1],         # above-left
        [150, 50, 1e12, 1e12],      # huge but overlapping: kept
    ]}))
    boxes = BoxFile(str(path), bbox_thr=0.3)
    out = boxes(_frame())
    np.testing.assert_allclose(out[:, :4], [[10, 10, 50, 50],
                                            [150, 50, 1e12, 1e12]])
    assert boxes.num_below_thr == 1 and boxes.num_outside == 2
    report = ' '.join(boxes.report())
    assert '1 box(es) with score <= --bbox-thr 0.3' in report
    assert '2 box(es) entirely outside' in report
    # frames not listed use the whole image
    np.testing.assert_array_equal(boxes(_frame('b.jpg'))[:, :4],
                                  [[0, 0, 199, 99]])
    assert boxes.num_missing == 1


def test_whole_image_box_is_the_official_one():
    # the official demo: [0, 0, w - 1, h - 1]
    np.testing.assert_array_equal(WholeImageBoxes()(_frame(h=10, w=20)),
                                  [[0, 0, 19, 9, 1]])
