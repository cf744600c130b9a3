"""Skeleton and palette drawing: colors from the metainfo, pixel checks."""
import numpy as np
import pytest
from mmpose.datasets.datasets.utils import parse_pose_metainfo

from sapiens2_mm.metainfo.pose import keypoints308_dataset_info
from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.visualization import (
    colorize_labels,
    draw_pose,
    overlay_labels,
    seg_side_by_side,
)


def test_308_keypoint_colors_and_threshold():
    meta = parse_pose_metainfo(keypoints308_dataset_info())
    assert meta['num_keypoints'] == 308
    image = np.zeros((200, 200, 3), np.uint8)
    kpts = np.zeros((1, 308, 2), np.float32)
    scores = np.zeros((1, 308), np.float32)
    kpts[0, 0] = (50, 50)     # nose, drawn
    kpts[0, 100] = (150, 150)  # a face point, below the threshold
    scores[0, 0], scores[0, 100] = 0.9, 0.2
    out = draw_pose(image, kpts, scores, meta, kpt_thr=0.3, radius=3)
    r, g, b = meta['keypoint_colors'][0]
    assert tuple(out[50, 50]) == (b, g, r)  # metainfo RGB -> BGR canvas
    assert not out[140:160, 140:160].any()
    assert not image.any()  # input untouched


def test_skeleton_link_drawn_with_link_color():
    meta = parse_pose_metainfo(keypoints308_dataset_info())
    a, b = meta['skeleton_links'][0]
    kpts = np.zeros((1, 308, 2), np.float32)
    scores = np.zeros((1, 308), np.float32)
    kpts[0, a], kpts[0, b] = (20, 100), (180, 100)
    scores[0, [a, b]] = 1.0
    out = draw_pose(np.zeros((200, 200, 3), np.uint8), kpts, scores, meta,
                    radius=1, thickness=3)
    r, g, bl = meta['skeleton_link_colors'][0]
    assert tuple(out[100, 100]) == (bl, g, r)


def test_palette_overlay():
    meta = seg29_metainfo()
    labels = np.array([[0, 4], [22, 28]])
    colors = colorize_labels(labels, meta['palette'])
    assert tuple(colors[0, 1]) == tuple(meta['palette'][4][::-1])
    image = np.full((2, 2, 3), 100, np.uint8)
    out = overlay_labels(image, labels, meta['palette'], opacity=0.5)
    expected = np.round(0.5 * 100 + 0.5 * np.array(meta['palette'][22][::-1]))
    np.testing.assert_array_equal(out[1, 0], expected)
    side = seg_side_by_side(image, labels, meta['palette'])
    assert side.shape == (2, 4, 3)
    np.testing.assert_array_equal(side[:, :2], image)
    with pytest.raises(ValueError, match='sizes'):
        overlay_labels(image, labels[:1], meta['palette'])


@pytest.mark.parametrize('opacity', [0.0, 0.5, 1.0, 0.3, 0.7])
def test_blend_equals_the_float32_formula_on_every_value_pair(opacity):
    from sapiens2_mm.visualization.seg_drawer import blend
    # every (image, color) byte pair, 3 channels, an odd width so vector
    # and scalar tails of the cv2 path are both exercised
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    image = np.stack([a, b, a], -1).reshape(256, 256, 3)[:, :255]
    colors = np.stack([b, a, b], -1).reshape(256, 256, 3)[:, :255]
    ref = (1 - opacity) * image.astype(np.float32) + opacity * colors.astype(
        np.float32)
    ref = np.clip(np.round(ref), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(blend(image, colors, opacity), ref)


@pytest.mark.parametrize('dtype', [np.uint8, np.int64, np.uint16])
def test_colorize_look_up_paths_agree(dtype):
    meta = seg29_metainfo()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 40, (37, 53))  # 29..39: outside the palette
    if dtype != np.uint8:
        labels[0, :5] = [-1, 255, 256, 300, 28] if dtype == np.int64 else \
            [255, 256, 300, 1000, 28]
    out = colorize_labels(labels.astype(dtype), meta['palette'])
    table = np.array(meta['palette'], np.uint8)[:, ::-1]
    flat = labels.astype(np.int64).ravel()
    expected = np.zeros((flat.size, 3), np.uint8)
    inside = (flat >= 0) & (flat < 29)
    expected[inside] = table[flat[inside]]
    np.testing.assert_array_equal(out, expected.reshape(37, 53, 3))
