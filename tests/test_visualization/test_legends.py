"""Keys under the drawings (issue 18, item 19): seg class names and colors,
the normal color code, and ground truth beside dense predictions."""
import os.path as osp
from types import SimpleNamespace

import cv2
import numpy as np
import torch
from mmengine.structures import PixelData

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.structures.dense_data_sample import DenseDataSample
from sapiens2_mm.visualization import (
    depth_range,
    depth_to_bgr,
    draw_dense_prediction,
    normal_to_bgr,
)
from sapiens2_mm.visualization.legends import class_legend, normal_key


def _pixels_of(image, bgr):
    return int(np.all(image == np.asarray(bgr, np.uint8), axis=-1).sum())


def test_class_legend_shows_every_color_and_greys_absent_names():
    meta = seg29_metainfo()
    classes, palette = meta['classes'], meta['palette']
    all_white = class_legend(640, classes, palette)
    some = class_legend(640, classes, palette, present=[0, 5])
    # one layout for any frame (a video keeps its size)
    assert all_white.shape == some.shape and all_white.shape[1] == 640
    for rgb in np.asarray(palette)[1:]:  # background is black-ish on black
        # a filled swatch of the class color (BGR), at least 8x8 pixels
        assert _pixels_of(some, rgb[::-1]) >= 64, rgb
    none = class_legend(640, classes, palette, present=[])

    def bright(strip):  # text pixels: white names are brighter than grey
        return int((strip.min(axis=-1) > 160).sum())
    assert bright(none) < bright(some) < bright(all_white)
    # at one text size (up to 900 px wide) a narrower strip needs more rows
    assert class_legend(320, classes, palette).shape[0] > all_white.shape[0]


def test_normal_key_is_colored_like_the_normals():
    key = normal_key(400)
    radius = (24 - 4) / 2.0  # a disc of 21 pixels, 1 row from the top
    size = int(2 * radius) + 1
    top = (24 - size) // 2
    centre = key[top + int(radius), 4 + int(radius)]
    # the centre of the disc faces the camera: n = (0, 0, -1)
    expected = normal_to_bgr(np.array([[[0, 0, -1]]], np.float32))[0, 0]
    np.testing.assert_array_equal(centre, expected)
    right = key[top + int(radius), 4 + size - 2].astype(int)
    left = key[top + int(radius), 5].astype(int)
    assert right[2] > 200 and left[2] < 60  # red grows with x (to the right)


def _normals(h, w, seed):
    n = np.random.default_rng(seed).normal(size=(h, w, 3)).astype(np.float32)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


def test_ground_truth_is_drawn_beside_the_prediction():
    h, w = 40, 30
    image = np.full((h, w, 3), 90, np.uint8)
    pred, gt = _normals(h, w, 0), _normals(h, w, 1)
    mask = np.ones((h, w), bool)
    mask[:, :5] = False
    only_pred = draw_dense_prediction(image, {'pred_normal': pred})
    assert only_pred.shape == (h + 24, 2 * w, 3)  # normals + color key
    drawn = draw_dense_prediction(image, {'pred_normal': pred},
                                  {'gt_normal': gt}, mask)
    assert drawn.shape == (h + 24, 3 * w, 3)
    rows = slice(h // 2, h)  # below the panel titles
    np.testing.assert_array_equal(drawn[rows, w:2 * w],
                                  normal_to_bgr(pred)[rows])
    expected_gt = normal_to_bgr(gt)
    expected_gt[~mask] = 0
    np.testing.assert_array_equal(drawn[rows, 2 * w:], expected_gt[rows])


def test_depth_prediction_and_truth_share_the_truth_bounds():
    h, w = 60, 16
    image = np.zeros((h, w, 3), np.uint8)
    gt = np.linspace(1.0, 5.0, h * w).reshape(h, w, 1)
    pred = gt * 2.0  # twice as far: another color under the same bounds
    drawn = draw_dense_prediction(image, {'pred_depth': pred},
                                  {'gt_depth': gt})
    bounds = depth_range(gt[..., 0])
    rows = slice(h // 2, h)
    np.testing.assert_array_equal(drawn[rows, w:2 * w],
                                  depth_to_bgr(pred[..., 0], bounds)[rows])
    np.testing.assert_array_equal(drawn[rows, 2 * w:3 * w],
                                  depth_to_bgr(gt[..., 0], bounds)[rows])


def test_show_dir_hook_draws_the_sample_ground_truth(tmp_path):
    from sapiens2_mm.engine.hooks.dense_visualization_hook import DenseVisualizationHook
    h, w = 48, 18
    image = np.full((h, w, 3), 60, np.uint8)
    path = str(tmp_path / 'a.png')
    cv2.imwrite(path, image)
    pred, gt = _normals(h, w, 2), _normals(h, w, 3)
    sample = DenseDataSample(metainfo=dict(img_path=path))
    sample.pred_normal = PixelData(data=torch.from_numpy(pred).permute(2, 0, 1))
    sample.gt_normal = PixelData(data=torch.from_numpy(gt).permute(2, 0, 1))
    sample.gt_mask = PixelData(data=torch.ones(1, h, w, dtype=torch.bool))
    out = tmp_path / 'show'
    hook = DenseVisualizationHook(out_dir=str(out), enable=True)
    hook.after_test_iter(SimpleNamespace(logger=None), 0, None, [sample])
    drawn = cv2.imread(osp.join(out, 'a.png'))
    assert drawn.shape == (h + 24, 3 * w, 3)
    np.testing.assert_array_equal(drawn[h // 2:h, 2 * w:],
                                  normal_to_bgr(gt)[h // 2:])
