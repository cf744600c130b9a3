"""NormalGenerateTarget and PointmapGenerateTarget give the arrays of their
previous implementations (kept in tools/benchmarks/loader_4k.py, where the
4K loader benchmark runs them as ``4k-before``), bit for bit.

Both are the same float operations in the same order on the same machine,
so nothing needs a tolerance: the unit normal is (x*x + y*y) + z*z (numpy
reduces the three squares of np.linalg.norm left to right), its sqrt and one
division in float32; the pointmap is x * Z * scale in float64 with x and y
computed per column / row, rounded to float32 once.
"""
import copy
import glob
import os.path as osp

import numpy as np
import pytest
from mmengine.config import Config

from sapiens2_mm.registry import DATASETS, TRANSFORMS
from tests.conftest import DATA_DIR, REPO_DIR
from tests.test_tools.workflow_utils import load_tool

LOADER_4K = load_tool('benchmarks/loader_4k')


def _previous(type_: str, **cfg):
    step = TRANSFORMS.build(dict(type=type_, **cfg))
    method, previous = LOADER_4K.PREVIOUS_METHODS[type_]
    setattr(step, method, previous.__get__(step))
    return step


def _bits(a: np.ndarray) -> np.ndarray:
    """The bytes of an array (tells -0.0 from 0.0 and NaN payloads)."""
    return np.ascontiguousarray(a).view(np.uint8)


def _assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype, key
            assert got[key].shape == value.shape, key
            assert np.array_equal(_bits(got[key]), _bits(value)), key
        else:
            assert type(got[key]) is type(value), key
            assert got[key] == value or (value != value and
                                         got[key] != got[key]), key


def _check(type_: str, results: dict, **cfg) -> dict:
    want = _previous(type_, **cfg)(copy.deepcopy(results))
    got = TRANSFORMS.build(dict(type=type_, **cfg))(copy.deepcopy(results))
    _assert_same(got, want)
    return got


def _bundled_4k_samples(task: str, seeds):
    """The bundled dense scenes through the task's shipped 4K training
    pipeline up to its target step (random scale, crop, flip, letterbox to
    the 2048x1536 output), one draw per seed."""
    path, = glob.glob(osp.join(REPO_DIR, 'configs', task,
                               'sapiens2-1b-4k_*.py'))
    cfg = Config.fromfile(path).train_dataloader.dataset
    pipeline = cfg.pop('pipeline')
    dataset = DATASETS.build(dict(cfg, pipeline=[], data_root=osp.join(
        DATA_DIR, 'dense_sample')))
    types = [s['type'] for s in pipeline]
    at = types.index(f'{task.capitalize()}GenerateTarget')
    prefix = [TRANSFORMS.build(s) for s in pipeline[:at]]
    for seed in seeds:
        np.random.seed(seed)
        results = dataset.get_data_info(seed % len(dataset))
        for step in prefix:
            results = step(results)
        yield results, pipeline[at]


def test_normal_target_equals_previous_on_the_bundled_4k_samples():
    for results, cfg in _bundled_4k_samples('normal', range(4)):
        cfg = dict(cfg)
        got = _check(cfg.pop('type'), results, **cfg)
        assert got['gt_normal'].shape == (2048, 1536, 3)
        assert got['gt_mask'].any() and not got['gt_mask'].all()


def _normal_edge_cases(dtype):
    rng = np.random.default_rng(0)
    h, w = 23, 31
    normal = rng.normal(size=(h, w, 3)).astype(dtype)
    normal[:4] *= dtype(7.5)  # far from unit length
    normal[4, :] = 0  # zero vector
    for col, length in enumerate((1e-6, 1.0000001e-6, 9.9e-7, 1e-7,
                                  2e-6, 1e-30)):
        normal[5, col] = (length, 0, 0)  # around the 1e-6 threshold
    normal[6, 0] = (np.nan, 0, 0)
    normal[6, 1] = (np.inf, 1, 0)
    normal[6, 2] = (-0.0, -0.0, 1)
    normal[6, 3] = (3e19, 4e19, 0)  # float32 squares overflow
    mask = rng.random((h, w)) < 0.7
    mask[4:7] = True
    return normal, mask


@pytest.mark.filterwarnings('ignore::RuntimeWarning')  # inf, NaN on purpose
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('background', [-1000.0, None])
def test_normal_target_equals_previous_on_edge_cases(dtype, background):
    normal, mask = _normal_edge_cases(dtype)
    for m in (mask, np.zeros_like(mask), np.ones_like(mask)):
        _check('NormalGenerateTarget',
               dict(gt_normal=normal, gt_mask=m),
               background_value=background)
    # a view, as a flip leaves it
    _check('NormalGenerateTarget',
           dict(gt_normal=normal[:, ::-1], gt_mask=mask[:, ::-1]))
    # integer normals: both compute in float64
    _check('NormalGenerateTarget',
           dict(gt_normal=np.arange(60).reshape(4, 5, 3) - 30, gt_mask=mask[
               :4, :5]))
    # no normal: nothing to do
    _check('NormalGenerateTarget', dict(gt_mask=mask))


def test_pointmap_target_equals_previous_on_the_bundled_4k_samples():
    for results, cfg in _bundled_4k_samples('pointmap', range(4)):
        cfg = dict(cfg)
        got = _check(cfg.pop('type'), results, **cfg)
        assert got['gt_pointmap'].shape == (2048, 1536, 3)
        assert got['gt_mean_depth'] > 0


def _pointmap_sample(h, w, K, rng, cam_K=None):
    depth = rng.uniform(0.5, 8.0, (h, w)).astype(np.float32)
    depth[rng.random((h, w)) < 0.1] = 0.0
    mask = depth > 0
    return dict(gt_depth=depth, gt_mask=mask, gt_cam_K=K,
                cam_K=K if cam_K is None else cam_K)


def test_pointmap_target_equals_previous_on_edge_cases():
    rng = np.random.default_rng(1)
    K = np.array([[611.3, 0.0, 301.7], [0.0, 608.9, 201.2], [0, 0, 1]])
    skewed = K.copy()
    skewed[0, 1] = 2.5
    negative_zero_skew = K.copy()
    negative_zero_skew[0, 1] = -0.0
    centre_on_pixels = np.array([[500.0, 0, 3.0], [0, 500.0, 2.0], [0, 0,
                                                                     1]])
    for h, w, k in [(41, 57, K), (41, 57, skewed), (41, 57, negative_zero_skew),
                    (7, 5, centre_on_pixels), (1, 9, K), (9, 1, K),
                    (41, 57, K.astype(np.float32))]:
        _check('PointmapGenerateTarget', _pointmap_sample(h, w, k, rng),
               canonical_focal_length=1536.0)
    # test time: the targets' camera differs from the network input's
    _check('PointmapGenerateTarget',
           _pointmap_sample(41, 57, K, rng, cam_K=K * [[2], [2], [1]]))
    # an empty mask, a float64 depth, a flipped (non-contiguous) depth
    sample = _pointmap_sample(12, 10, K, rng)
    sample['gt_mask'] = np.zeros_like(sample['gt_mask'])
    got = _check('PointmapGenerateTarget', sample)
    assert got['gt_mean_depth'] == 0.0
    sample = _pointmap_sample(12, 10, K, rng)
    sample['gt_depth'] = sample['gt_depth'].astype(np.float64)[:, ::-1]
    _check('PointmapGenerateTarget', sample)
    # no depth: nothing to do
    _check('PointmapGenerateTarget', dict(gt_mask=np.ones((2, 2), bool)))
