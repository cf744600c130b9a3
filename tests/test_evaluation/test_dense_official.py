"""Dense metrics reproduce the official Sapiens2 evaluators' outputs.

The inputs and values in tests/data/official_metrics were produced by the
official NormalEvaluator / PointmapEvaluator / AlbedoEvaluator.
"""
import pytest

from sapiens2_mm.registry import METRICS

from .test_dense_data import official_batches, official_inputs

# Named options reproducing the official evaluators' defects.
OFFICIAL = dict(pred_resize='official', duplicate_samples='official')
CASES = {
    'normal': (dict(type='NormalMetric'), 'pred_normal', 'gt_normal', None),
    # official: canonical prediction, predicted scale ignored (all ones)
    'pointmap': (dict(type='PointmapMetric', pred_pointmap_space='canonical'),
                 'pred_pointmap', 'gt_pointmap',
                 dict(pred_scale=1.0, canonical_scale=1.0)),
    'albedo': (dict(type='AlbedoMetric'), 'pred_albedo', 'gt_albedo', None),
}


def _evaluate(task, official_options):
    cfg, pred_key, gt_key, meta = CASES[task]
    cfg = dict(cfg, **(OFFICIAL if official_options else {}))
    if official_options and task == 'albedo':
        cfg['psnr_data_range'] = 'official'
    metric = METRICS.build(cfg)
    for batch in official_batches(task, pred_key, gt_key, meta):
        metric.process({}, batch)
    return metric.evaluate(6)


@pytest.mark.parametrize('official_options', [True, False])
@pytest.mark.parametrize('task', ['normal', 'pointmap', 'albedo'])
def test_reproduces_official_values(task, official_options):
    """Official options: 1e-6 relative. The defaults agree on these inputs
    (same sizes, no repeated sample, GT range 1)."""
    _, manifest = official_inputs()
    expected = manifest[task]['metrics']
    assert manifest[task]['cfg'] == {}
    result = _evaluate(task, official_options)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key
    # extras are named apart from the official keys
    extras = set(result) - set(expected)
    assert extras and all('/' in k for k in extras)
