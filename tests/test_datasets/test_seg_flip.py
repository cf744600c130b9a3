"""SegRandomFlipLUT gives mmseg RandomFlip's image and label map (the
left / right label swap as a table) and its flip decisions."""
import copy

import numpy as np
import pytest

from sapiens2_mm.registry import TRANSFORMS

SEG29_PAIRS = [(5, 14), (6, 15), (7, 16), (8, 17), (9, 18), (10, 19),
               (11, 20), (12, 21)]


def _results(rng, shape=(37, 29)):
    every = np.arange(np.prod(shape)).reshape(shape) % 256
    return dict(img=rng.integers(0, 256, shape + (3, ), dtype=np.uint8),
                gt_seg_map=every.astype(np.uint8),
                seg_fields=['gt_seg_map'])


@pytest.mark.filterwarnings('ignore:NumPy will stop allowing conversion')
@pytest.mark.parametrize('pairs', [
    SEG29_PAIRS,
    [(1, 2), (2, 3), (3, 1)],  # chained: later pairs win, as upstream
    [(4, 4), (0, 255), (7, 300)],  # self pair, extremes, a value no uint8 has
])
@pytest.mark.parametrize('direction', ['horizontal', 'vertical', 'diagonal'])
def test_flip_equals_mmseg(pairs, direction):
    rng = np.random.default_rng(0)
    cfg = dict(prob=0.5, direction=direction, swap_seg_labels=pairs)
    fast = TRANSFORMS.build(dict(type='SegRandomFlipLUT', **cfg))
    upstream = TRANSFORMS.build(dict(type='mmseg.RandomFlip', **cfg))
    flipped = 0
    for seed in range(12):
        results = _results(rng)
        np.random.seed(seed)
        want = upstream(copy.deepcopy(results))
        want_next = np.random.rand()
        np.random.seed(seed)
        got = fast(copy.deepcopy(results))
        assert np.random.rand() == want_next
        assert got['flip'] == want['flip']
        flipped += got['flip']
        for key in ('img', 'gt_seg_map'):
            assert got[key].dtype == want[key].dtype
            np.testing.assert_array_equal(got[key], want[key])
        assert got.get('swap_seg_labels') == want.get('swap_seg_labels')
    assert 0 < flipped < 12


def test_other_label_maps_go_to_upstream():
    """int32 labels and no pairs: upstream's own code."""
    rng = np.random.default_rng(1)
    for labels, pairs in ((rng.integers(0, 600, (9, 8), dtype=np.int32),
                           [(5, 14), (599, 3)]),
                          (rng.integers(0, 29, (9, 8), dtype=np.uint8), None)):
        cfg = dict(prob=1.0, direction='horizontal', swap_seg_labels=pairs)
        results = dict(img=np.zeros((9, 8, 3), np.uint8), gt_seg_map=labels,
                       seg_fields=['gt_seg_map'])
        want = TRANSFORMS.build(dict(type='mmseg.RandomFlip', **cfg))(
            copy.deepcopy(results))
        got = TRANSFORMS.build(dict(type='SegRandomFlipLUT', **cfg))(
            copy.deepcopy(results))
        np.testing.assert_array_equal(got['gt_seg_map'], want['gt_seg_map'])
