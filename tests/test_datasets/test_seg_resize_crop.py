"""Seg training's random rescale + crop at 4K: SegRandomResizeCrop against
the official SegRandomResize + SegRandomCrop on the bundled sample, and the
class counting of the crop's cat_max_ratio rule."""
import copy
import os.path as osp

import cv2
import numpy as np
import pytest
from mmengine.config import Config

from sapiens2_mm.registry import DATASETS, TRANSFORMS
from tests.conftest import DATA_DIR, REPO_DIR

SEG_4K = osp.join(REPO_DIR, 'configs', 'seg',
                  'sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py')


def _loaded_samples_and_steps():
    """The bundled seg sample loaded as the shipped 4K training pipeline
    loads it, and that pipeline's SegRandomResize / SegRandomCrop."""
    cfg = Config.fromfile(SEG_4K)
    dataset_cfg = cfg.train_dataloader.dataset
    pipeline = dataset_cfg.pop('pipeline')
    dataset = DATASETS.build(dict(
        dataset_cfg, pipeline=[], data_root=osp.join(DATA_DIR, 'seg_sample'),
        data_prefix=dict(img_path='images', seg_map_path='labels')))
    types = [s['type'] for s in pipeline]
    at = types.index('SegRandomResize')
    assert types[at + 1] == 'SegRandomCrop'
    loading = [TRANSFORMS.build(s) for s in pipeline[:at]]
    samples = []
    for index in range(len(dataset)):
        results = dataset.get_data_info(index)
        for step in loading:
            results = step(results)
        samples.append(results)
    return samples, pipeline[at], pipeline[at + 1]


SAMPLES, RESIZE, CROP = _loaded_samples_and_steps()


def _run(steps, results, seed):
    np.random.seed(seed)
    results = copy.deepcopy(results)
    for step in steps:
        results = step(results)
    return results


def _combined(prob, crop_first):
    return TRANSFORMS.build(dict(
        type='SegRandomResizeCrop', height=RESIZE['height'],
        width=RESIZE['width'], ratio_range=RESIZE['ratio_range'],
        keep_ratio=RESIZE['keep_ratio'], prob=prob,
        cat_max_ratio=CROP['cat_max_ratio'], crop_first=crop_first))


def _check_same_keys(expected, got, image_equal):
    assert expected.keys() == got.keys()
    for key, value in expected.items():
        if key == 'img' and not image_equal:
            continue
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, got[key], err_msg=key)
        else:
            assert value == got[key], key


@pytest.mark.parametrize('prob', [CROP['prob'], 1.0])
def test_combined_step_is_the_official_two_steps(prob):
    """crop_first=False: the same random draws and arrays as the shipped
    SegRandomResize + SegRandomCrop (4096x3072 box, ratio 0.4-2.0)."""
    official = [TRANSFORMS.build(RESIZE),
                TRANSFORMS.build(dict(CROP, prob=prob))]
    combined = [_combined(prob, crop_first=False)]
    for seed in range(8):
        results = SAMPLES[seed % len(SAMPLES)]
        _check_same_keys(_run(official, results, seed),
                         _run(combined, results, seed), image_equal=True)


def test_crop_first_gives_the_official_crop():
    """crop_first=True with every sample cropped: the window, label, sizes
    and factors are the official ones exactly; the image is the same cubic
    interpolation of the same source pixels, computed over a smaller
    region. Tolerance: OpenCV's IPP backend (on by default) splits a resize
    into tiles by image size and rounds a few pixels differently (1 grey
    level); with IPP off every pixel must be equal."""
    official = [_combined(1.0, crop_first=False)]
    cropped_first = [_combined(1.0, crop_first=True)]
    ipp = cv2.ipp.useIPP()
    try:
        for use_ipp in (True, False):
            cv2.ipp.setUseIPP(use_ipp)
            for seed in range(8):
                results = SAMPLES[seed % len(SAMPLES)]
                expected = _run(official, results, seed)
                got = _run(cropped_first, results, seed)
                assert got['img'].shape == (4096, 3072, 3)
                _check_same_keys(expected, got, image_equal=False)
                diff = np.abs(got['img'].astype(int) - expected['img'])
                if use_ipp:
                    assert diff.max() <= 1
                    assert np.count_nonzero(diff) <= 1e-4 * diff.size
                else:
                    assert diff.max() == 0
    finally:
        cv2.ipp.setUseIPP(ipp)


def test_crop_first_keeps_the_official_path_when_shrinking():
    """A photo larger than the rescaled size is shrunk (INTER_AREA): the
    official path runs, arrays equal."""
    rng = np.random.default_rng(0)
    results = dict(img=rng.integers(0, 255, (900, 700, 3), np.uint8),
                   gt_seg_map=rng.integers(0, 5, (900, 700), np.uint8))
    small = dict(type='SegRandomResizeCrop', height=400, width=300,
                 ratio_range=(0.5, 1.0), prob=1.0)
    for seed in range(4):
        _check_same_keys(
            _run([TRANSFORMS.build(small)], results, seed),
            _run([TRANSFORMS.build(dict(small, crop_first=True))], results,
                 seed), image_equal=True)


def test_class_counts_are_np_unique_counts():
    crop = TRANSFORMS.build(dict(type='SegRandomCrop', height=8, width=8))
    rng = np.random.default_rng(0)
    for labels in (rng.integers(0, 29, (300, 200), np.uint8),
                   np.where(rng.random((64, 48)) < 0.5, 255, 3).astype(
                       np.uint8),
                   rng.integers(0, 29, (50, 40), np.int32),  # not uint8
                   np.full((10, 10), 255, np.uint8)):  # all ignored
        window = labels[3:-5, 2:-7]  # a non-contiguous view, as a crop is
        _, expected = np.unique(window[window != 255], return_counts=True)
        np.testing.assert_array_equal(crop._class_counts(window), expected)


def test_noise_official_generator_is_the_official_draw():
    """generator='official' (default): np.random.normal of the global
    generator, as the official code; computed here independently."""
    img = np.random.default_rng(1).integers(0, 255, (64, 48, 3), np.uint8)
    noise = TRANSFORMS.build(dict(type='SegRandomGaussianNoise', prob=1.0,
                                  var_range=(5.0, 20.0)))
    assert noise.generator == 'official'
    np.random.seed(3)
    got = noise(dict(img=img.copy()))['img']
    np.random.seed(3)
    np.random.rand()  # the probability draw
    std = np.sqrt(np.random.uniform(5.0, 20.0))
    expected = np.clip(img.astype(np.float32) + np.random.normal(
        0.0, std, img.shape).astype(np.float32), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, expected)


def test_noise_pcg64_option_has_the_official_distribution():
    """generator='pcg64' (named option): other numbers, the same N(0, var)
    per pixel and channel (mid-grey image: no clipping)."""
    img = np.full((512, 512, 3), 128, np.uint8)
    for generator in ('official', 'pcg64'):
        noise = TRANSFORMS.build(dict(type='SegRandomGaussianNoise',
                                      prob=1.0, var_range=(16.0, 16.0),
                                      generator=generator))
        np.random.seed(0)
        # truncation to uint8 moves the mean by about -0.5
        added = noise(dict(img=img.copy()))['img'].astype(float) - 128 + 0.5
        assert abs(added.mean()) < 0.02 and abs(added.std() - 4.0) < 0.05
    with pytest.raises(ValueError, match="generator='mt'"):
        TRANSFORMS.build(dict(type='SegRandomGaussianNoise', generator='mt'))
