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


def test_coco_annotation_file_gives_the_person_boxes(tmp_path):
    """A COCO annotation file is a bbox file: xywh -> xyxy per file_name,
    crowd and non-person annotations left out, a listed image without
    people gets no box (not the whole image); an annotation of an unlisted
    image is refused by name."""
    coco = {'images': [{'id': 7, 'file_name': 'a.jpg'},
                       {'id': 8, 'file_name': 'empty.jpg'}],
            'categories': [{'id': 1, 'name': 'person'},
                           {'id': 2, 'name': 'dog'}],
            'annotations': [
                {'id': 1, 'image_id': 7, 'category_id': 1,
                 'bbox': [10, 20, 30, 40], 'iscrowd': 0},
                {'id': 2, 'image_id': 7, 'category_id': 1,
                 'bbox': [0, 0, 100, 90], 'iscrowd': 1},
                {'id': 3, 'image_id': 7, 'category_id': 2,
                 'bbox': [5, 5, 10, 10], 'iscrowd': 0}]}
    path = tmp_path / 'coco.json'
    path.write_text(json.dumps(coco))
    boxes = BoxFile(str(path))
    np.testing.assert_array_equal(boxes(_frame('a.jpg')),
                                  [[10, 20, 40, 60, 1]])
    assert boxes(_frame('empty.jpg')).shape == (0, 5)
    coco['annotations'].append({'id': 9, 'image_id': 99, 'category_id': 1,
                                'bbox': [0, 0, 1, 1]})
    path.write_text(json.dumps(coco))
    with pytest.raises(ValueError, match="annotation 9 refers to image_id 99"):
        BoxFile(str(path))
