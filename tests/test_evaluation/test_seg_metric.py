"""SegIoUMetric: official SegEvaluator vectors, mmseg IoUMetric equality."""
import json
import os.path as osp

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmengine.structures import PixelData
from mmseg.evaluation import IoUMetric
from mmseg.structures import SegDataSample
from safetensors.torch import load_file

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.registry import METRICS
from tests.conftest import DATA_DIR

CLASSES = seg29_metainfo()['classes']


def _metric(**kwargs):
    metric = METRICS.build(dict(type='SegIoUMetric', **kwargs))
    metric.dataset_meta = dict(classes=CLASSES)
    return metric


def _sample(gt, logits=None, pred=None):
    sample = SegDataSample(gt_sem_seg=PixelData(data=gt))
    if logits is not None:
        sample.seg_logits = PixelData(data=logits)
    if pred is not None:
        sample.pred_sem_seg = PixelData(data=pred)
    return sample.to_dict()


def test_reproduces_official_evaluator():
    data = load_file(osp.join(DATA_DIR, 'official_metrics',
                              'metrics_inputs.safetensors'))
    with open(osp.join(DATA_DIR, 'official_metrics',
                       'metrics_manifest.json')) as f:
        manifest = json.load(f)['seg']
    assert manifest['cfg']['nan_to_num'] == 0.0
    metric = _metric()
    for i in range(3):
        # logits at half the label size: the metric resizes them.
        metric.process({}, [
            _sample(gt, logits=logits)
            for logits, gt in zip(data[f'seg_pred_{i}'], data[f'seg_gt_{i}'])
        ])
    result = metric.evaluate(6)
    for name, value in manifest['metrics'].items():
        assert result[name] == pytest.approx(round(value, 2), abs=1e-6), name
    assert len([k for k in result if k.startswith('IoU.')]) == 29


def _random_case(seed, absent=(3, 9, 27)):
    g = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(3):
        gt = torch.randint(0, 29, (1, 20, 16), generator=g)
        pred = torch.randint(0, 29, (1, 20, 16), generator=g)
        for c in absent:  # absent from both GT and prediction
            gt[gt == c] = 0
            pred[pred == c] = 1
        gt[0, :2] = 255
        samples.append((gt, pred))
    return samples


def test_mmseg_convention_equals_mmseg_iou_metric():
    ours = _metric(nan_to_num=None)
    theirs = IoUMetric(iou_metrics=['mIoU'])
    theirs.dataset_meta = dict(classes=CLASSES)
    for gt, pred in _random_case(0):
        batch = [_sample(gt, pred=pred)]
        ours.process({}, batch)
        theirs.process({}, batch)
    a, b = ours.evaluate(3), theirs.evaluate(3)
    for key in ('aAcc', 'mIoU', 'mAcc'):
        assert a[key] == b[key], key
    assert np.isnan(a['IoU.Face_Neck'])


def test_official_convention_counts_absent_classes_as_zero():
    """Hand computation over dataset-level sums, absent classes -> 0."""
    samples = _random_case(1)
    metric = _metric()
    inter = np.zeros(29)
    union = np.zeros(29)
    label = np.zeros(29)
    for gt, pred in samples:
        metric.process({}, [_sample(gt, pred=pred)])
        valid = gt != 255
        g, p = gt[valid].numpy(), pred[valid].numpy()
        for c in range(29):
            inter[c] += np.sum((g == c) & (p == c))
            union[c] += np.sum((g == c) | (p == c))
            label[c] += np.sum(g == c)
    result = metric.evaluate(3)
    with np.errstate(invalid='ignore', divide='ignore'):
        iou = np.nan_to_num(inter / union, nan=0.0)
        acc = np.nan_to_num(inter / label, nan=0.0)
    assert result['mIoU'] == pytest.approx(round(iou.mean() * 100, 2))
    assert result['mAcc'] == pytest.approx(round(acc.mean() * 100, 2))
    assert result['aAcc'] == pytest.approx(
        round(inter.sum() / label.sum() * 100, 2))
    assert result['IoU.Face_Neck'] == 0.0
    mmseg_style = _metric(nan_to_num=None)
    for gt, pred in samples:
        mmseg_style.process({}, [_sample(gt, pred=pred)])
    assert mmseg_style.evaluate(3)['mIoU'] > result['mIoU']


def test_logits_are_resized_bilinearly_before_argmax():
    logits = torch.zeros(29, 2, 2)
    logits[1, :, 0] = 1.0   # left column class 1
    logits[2, :, 1] = 1.0   # right column class 2
    gt = torch.ones(1, 4, 4, dtype=torch.long)
    gt[..., 2:] = 2
    metric = _metric()
    metric.process({}, [_sample(gt, logits=logits)])
    result = metric.evaluate(1)
    assert result['aAcc'] == 100.0
    assert result['IoU.Apparel'] == 100.0 and result['IoU.Eyeglass'] == 100.0


@pytest.mark.parametrize('smooth', [True, False])
def test_logits_resize_equals_full_interpolate_then_argmax(smooth):
    """The metric resizes with the inferencer's banded resize + argmax
    (codecs.label_resize): the same numbers as PyTorch's full-image
    interpolation then argmax (the metric's earlier path), given as
    pred_sem_seg."""
    g = torch.Generator().manual_seed(2)
    if smooth:  # a trained segmenter's regions
        coarse = torch.randn(3, 29, 4, 3, generator=g) * 4
        logits = F.interpolate(coarse, size=(32, 24), mode='bicubic')
    else:
        logits = torch.randn(3, 29, 32, 24, generator=g)
    gts = torch.randint(0, 29, (3, 1, 301, 217), generator=g)
    gts[:, :, :5] = 255
    ours, reference = _metric(), _metric()
    for lg, gt in zip(logits, gts):
        ours.process({}, [_sample(gt, logits=lg)])
        full = F.interpolate(lg[None], size=(301, 217), mode='bilinear',
                             align_corners=False)[0]
        reference.process({}, [_sample(gt, pred=full.argmax(0)[None])])
    assert ours.evaluate(3) == reference.evaluate(3)


def test_prediction_of_wrong_size_is_an_error():
    metric = _metric()
    gt = torch.zeros(1, 4, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r'\(3, 4\).*\(4, 4\)'):
        metric.process({}, [_sample(gt, pred=torch.zeros(1, 3, 4,
                                                         dtype=torch.long))])


def _mmseg_samples(logits, gts=None, threshold=0.3, names=None):
    """Data samples exactly as an mmseg segmentor writes them:
    ``BaseSegmentor.postprocess_result`` (resize to ori_shape, argmax, or
    sigmoid + decode_head.threshold for one channel)."""
    from types import SimpleNamespace

    from mmseg.models.segmentors import BaseSegmentor
    stub = SimpleNamespace(decode_head=SimpleNamespace(threshold=threshold),
                           align_corners=False)
    samples = []
    for i in range(len(logits)):
        ori_shape = tuple(gts[i].shape[-2:]) if gts is not None else (24, 20)
        sample = SegDataSample(metainfo=dict(
            ori_shape=ori_shape, img_shape=tuple(logits.shape[-2:]),
            img_path=(names or [f'frame_{j}.jpg' for j in
                                range(len(logits))])[i]))
        if gts is not None:
            sample.gt_sem_seg = PixelData(data=gts[i])
        samples.append(sample)
    out = BaseSegmentor.postprocess_result(stub, logits, samples)
    return [s.to_dict() for s in out]


def test_binary_sigmoid_model_equals_mmseg():
    """One output channel (sigmoid): the labels are mmseg's thresholded
    pred_sem_seg, not an argmax over one channel."""
    g = torch.Generator().manual_seed(0)
    gts = torch.zeros(3, 1, 24, 20, dtype=torch.long)
    gts[:, :, 6:20, 4:15] = 1
    gts[0, 0, :2] = 255
    noise = torch.randn(3, 1, 12, 10, generator=g)
    small = F.interpolate(gts.float().clamp(max=1), size=(12, 10))
    logits = (small * 4 - 2) + noise
    classes = ('background', 'person')
    ours = METRICS.build(dict(type='SegIoUMetric', nan_to_num=None))
    theirs = IoUMetric(iou_metrics=['mIoU'])
    for m in (ours, theirs):
        m.dataset_meta = dict(classes=classes)
        m.process({}, _mmseg_samples(logits, gts))
    a, b = ours.evaluate(3), theirs.evaluate(3)
    assert 60 < b['mIoU'] < 99  # a non-trivial operating point
    for key in ('aAcc', 'mIoU', 'mAcc'):
        assert a[key] == b[key], key
    # one-channel logits alone cannot be turned into labels
    sample = _mmseg_samples(logits[:1], gts[:1])[0]
    del sample['pred_sem_seg']
    with pytest.raises(ValueError, match='threshold.*pred_sem_seg'):
        ours.process({}, [sample])


def _pngs(folder):
    import glob

    from PIL import Image
    return {osp.basename(p): np.array(Image.open(p))
            for p in sorted(glob.glob(osp.join(str(folder), '*.png')))}


def test_output_dir_and_format_only_equal_mmseg(tmp_path):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 29, 12, 10, generator=g)
    gts = torch.randint(0, 29, (2, 1, 24, 20), generator=g)
    # with ground truth: metrics and the written label maps
    ours = _metric(nan_to_num=None, output_dir=str(tmp_path / 'ours'))
    theirs = IoUMetric(output_dir=str(tmp_path / 'theirs'))
    theirs.dataset_meta = dict(classes=CLASSES)
    for m in (ours, theirs):
        m.process({}, _mmseg_samples(logits, gts))
    a, b = ours.evaluate(2), theirs.evaluate(2)
    assert a['mIoU'] == b['mIoU'] and a['aAcc'] == b['aAcc']
    ref = _pngs(tmp_path / 'theirs')
    assert sorted(ref) == ['frame_0.png', 'frame_1.png']
    got = _pngs(tmp_path / 'ours')
    assert sorted(got) == sorted(ref)
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])
    # format_only, no ground truth at all: PNGs written, no metrics
    ours = _metric(format_only=True, output_dir=str(tmp_path / 'fo_ours'))
    theirs = IoUMetric(format_only=True, output_dir=str(tmp_path / 'fo_th'))
    theirs.dataset_meta = dict(classes=CLASSES)
    for m in (ours, theirs):
        m.process({}, _mmseg_samples(logits))
        assert m.evaluate(2) == {}
    ref, got = _pngs(tmp_path / 'fo_th'), _pngs(tmp_path / 'fo_ours')
    assert sorted(got) == sorted(ref) and len(ref) == 2
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])


def test_output_errors(tmp_path):
    with pytest.raises(ValueError, match='format_only=True.*output_dir'):
        _metric(format_only=True)
    # earlier PNGs are never overwritten
    (tmp_path / 'old').mkdir()
    (tmp_path / 'old' / 'frame_0.png').write_bytes(b'')
    with pytest.raises(FileExistsError, match='already holds 1 PNG'):
        _metric(output_dir=str(tmp_path / 'old'))
    # two images with the same stem
    metric = _metric(format_only=True, output_dir=str(tmp_path / 'new'))
    logits = torch.randn(2, 29, 12, 10)
    samples = _mmseg_samples(logits, names=['a/x.jpg', 'b/x.jpg'])
    with pytest.raises(ValueError, match='same file stem'):
        metric.process({}, samples)
    # the PNG would replace the input image
    img = tmp_path / 'new' / 'y.png'
    samples = _mmseg_samples(logits[:1], names=[str(img)])
    with pytest.raises(ValueError, match='overwrite the image itself'):
        metric.process({}, samples)
    # evaluating without ground truth and without format_only
    metric = _metric()
    with pytest.raises(ValueError, match='no gt_sem_seg.*format_only'):
        metric.process({}, _mmseg_samples(logits[:1]))


def test_nonfinite_logits_are_scored_wrong_and_reported(monkeypatch):
    """Logits that pick the label everywhere but are NaN at 3 background
    pixels (and inf at one ignored pixel). argmax takes NaN as the maximum,
    so those pixels got class 0, the label: scored right, aAcc 100. Hand
    count: 16 labelled pixels, 13 right; background IoU 5/8, class 2 all
    right."""
    from sapiens2_mm.evaluation.metrics.seg import seg_iou_metric
    messages = []
    monkeypatch.setattr(seg_iou_metric, 'print_log',
                        lambda msg, **kw: messages.append(msg), raising=False)
    gt = torch.tensor([[0] * 4, [0] * 4, [2] * 4, [2] * 4,
                       [255] * 4]).long()[None]  # (1, 5, 4)
    logits = torch.full((29, 5, 4), -5.0)
    for cls in (0, 2):
        logits[cls][gt[0] == cls] = 5.0
    logits[:, 0, :3] = float('nan')
    logits[7, 4, 0] = float('inf')  # an ignored pixel: not counted
    metric = _metric(nan_to_num=None)
    metric.process({}, [_sample(gt, logits=logits)])
    result = metric.evaluate(1)
    assert result['aAcc'] == pytest.approx(round(100 * 13 / 16, 2))
    assert result['IoU.' + CLASSES[0]] == pytest.approx(round(100 * 5 / 8, 2))
    assert result['IoU.' + CLASSES[2]] == 100.0
    assert result['nonfinite_pred_pixels'] == 3
    assert 'non-finite seg_logits' in ' '.join(messages)
