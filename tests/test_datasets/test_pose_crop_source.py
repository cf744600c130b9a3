"""Sapiens2TopdownCropSource: cutting the photo to what the 4K crop warp
reads leaves the warp's output as it was (within float rounding), so the
colour distortion can run on the source pixels (the named option of
docs/4k.md)."""
import copy
import os.path as osp

import numpy as np
from mmengine.config import Config

from sapiens2_mm.registry import DATASETS, TRANSFORMS
from tests.conftest import REPO_DIR

POSE_4K = osp.join(REPO_DIR, 'configs', 'pose',
                   'sapiens2-1b-4k_8xb7-20k_sapiens308-4096x3072.py')
SAMPLE = osp.join(REPO_DIR, 'configs', 'pose',
                  'sapiens2-tiny-4k_1xb12-300_sapiens308sample-512x384.py')


def _samples_before_the_warp(seeds):
    """The bundled 308-keypoint sample through the shipped 4K training
    pipeline up to the warp (flip, half body, box shift / scale / rotation
    drawn per seed), and the warp's config."""
    pipeline = Config.fromfile(POSE_4K).train_dataloader.dataset.pipeline
    dataset_cfg = Config.fromfile(SAMPLE).train_dataloader.dataset
    dataset = DATASETS.build(dict(dataset_cfg, pipeline=[]))
    at = [s['type'] for s in pipeline].index('Sapiens2TopdownAffine')
    before = [TRANSFORMS.build(s) for s in pipeline[:at]]
    samples = []
    for seed in seeds:
        np.random.seed(seed)
        results = dataset.get_data_info(seed % len(dataset))
        for step in before:
            results = step(results)
        samples.append(results)
    return samples, pipeline[at]


def test_cropping_the_source_leaves_the_4k_warp_unchanged():
    """The crop's pixels are copies, and the warp reads the same source
    pixels; what moves is mmpose's float32 warp matrix, whose translation
    rounds differently (about 1e-4 px) once the origin moves. cv2 snaps
    sample positions to 1/32 px, so a few pixels on edges are sampled 1/32
    px apart. Tolerance from 12 draws on the sample: at most 0.1 % of the
    values differ, by at most 16 grey levels; keypoints within 2e-3 px (the
    float32 rounding of a 4096-px coordinate)."""
    samples, warp_cfg = _samples_before_the_warp(range(12))
    warp = TRANSFORMS.build(warp_cfg)
    crop = TRANSFORMS.build(dict(type='Sapiens2TopdownCropSource',
                                 input_size=warp_cfg['input_size']))
    smaller = 0
    for results in samples:
        expected = warp(copy.deepcopy(results))
        cropped = crop(copy.deepcopy(results))
        smaller += cropped['img'].size < results['img'].size
        got = warp(cropped)
        assert got['img'].shape == expected['img'].shape == (4096, 3072, 3)
        diff = np.abs(got['img'].astype(int) - expected['img'])
        assert np.count_nonzero(diff) <= 1e-3 * diff.size
        assert diff.max() <= 16
        np.testing.assert_allclose(got['transformed_keypoints'],
                                   expected['transformed_keypoints'],
                                   atol=2e-3)
        np.testing.assert_array_equal(got['keypoints_visible'],
                                      expected['keypoints_visible'])
    assert smaller >= 9  # the crop is usually a part of the photo


def test_crop_source_keeps_a_photo_the_warp_reads_whole():
    """A box covering the photo: nothing to cut, nothing moved."""
    results = dict(img=np.zeros((40, 30, 3), np.uint8),
                   bbox_center=np.array([[15.0, 20.0]], np.float32),
                   bbox_scale=np.array([[300.0, 400.0]], np.float32),
                   keypoints=np.array([[[3.0, 4.0]]], np.float32))
    crop = TRANSFORMS.build(dict(type='Sapiens2TopdownCropSource',
                                 input_size=(384, 512)))
    out = crop(copy.deepcopy(results))
    assert out['img'].shape == (40, 30, 3)
    np.testing.assert_array_equal(out['keypoints'], results['keypoints'])
