"""Dense drawings: hand-computed colors, depth bounds and error paths."""
import cv2
import numpy as np
import pytest

from sapiens2_mm.engine.hooks import DenseVisualizationHook
from sapiens2_mm.visualization import (
    albedo_to_bgr,
    depth_range,
    depth_to_bgr,
    draw_dense_prediction,
    normal_to_bgr,
)


def test_normal_colors_are_half_plus_half_n_in_rgb():
    normal = np.array([[[1, 0, 0], [0, -1, 0], [0, 0, -1]]], np.float32)
    bgr = normal_to_bgr(normal)
    # x = 1 -> red 255; y = -1 -> green 0; z = -1 -> blue 0; 0 -> 127.5,
    # truncated to 127 as the official demo's astype(np.uint8)
    np.testing.assert_array_equal(bgr[0, 0], [127, 127, 255])
    np.testing.assert_array_equal(bgr[0, 1], [127, 0, 127])
    np.testing.assert_array_equal(bgr[0, 2], [0, 127, 127])
    # rounding='round': to the nearest level
    np.testing.assert_array_equal(normal_to_bgr(normal, 'round')[0, 0],
                                  [128, 128, 255])


def test_albedo_is_clamped_and_rgb():
    albedo = np.array([[[1.5, 0.5, -0.2]]], np.float32)
    np.testing.assert_array_equal(albedo_to_bgr(albedo)[0, 0], [0, 127, 255])
    np.testing.assert_array_equal(albedo_to_bgr(albedo, 'round')[0, 0],
                                  [0, 128, 255])
    # official: (a * 255).astype(np.uint8), for every float32 level
    levels = np.linspace(0, 1, 4097, dtype=np.float32).reshape(1, -1, 1)
    rgb = np.repeat(levels, 3, axis=2)
    np.testing.assert_array_equal(albedo_to_bgr(rgb)[..., ::-1],
                                  (rgb * 255).astype(np.uint8))
    with pytest.raises(ValueError, match='rounding'):
        albedo_to_bgr(rgb, 'ceil')


def test_depth_bounds_are_clamped_percentiles():
    depth = np.linspace(0.01, 400, 1001).reshape(7, 143)
    depth[0, :3] = [np.nan, np.inf, -1]
    lo, hi = depth_range(depth)
    valid = depth[np.isfinite(depth) & (depth > 0)]
    assert lo == pytest.approx(max(0.1, np.percentile(valid, 1)))
    assert hi == 250.0  # the 99th percentile (396 m) clamped
    assert depth_range(np.full((2, 2), np.nan)) is None
    assert not depth_to_bgr(np.zeros((2, 2))).any()  # nothing valid: black


def test_depth_colors_near_red_far_blue():
    depth = np.array([[1.0, 2.0, 4.0]])
    turbo = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[None],
                              cv2.COLORMAP_TURBO)[0]
    bgr = depth_to_bgr(depth, (1.0, 4.0))
    # inverse depth 1, 0.5, 0.25 between 1/4 and 1 -> levels 255, 85, 0
    np.testing.assert_array_equal(bgr[0], turbo[[255, 85, 0]])


def test_draw_needs_a_prediction_and_hook_needs_out_dir():
    image = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match='pred_normal, pred_depth, pred_albedo'):
        draw_dense_prediction(image, {'pred_sem_seg': None})
    with pytest.raises(ValueError, match='needs out_dir'):
        DenseVisualizationHook(enable=True)
