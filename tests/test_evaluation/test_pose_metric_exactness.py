"""KeypointOKSMetric / Keypoints308Metric against pycocotools, mmpose, xtcocotools.

Data: the 4 real COCO images (14 people) of tests/data/coco_sample with perturbed
ground-truth predictions (fixed seed: noise, dropped keypoints, random scores,
near-duplicates and false positives).
"""
import contextlib
import io
import json
from collections import defaultdict

import coco_wholebody_to_sapiens308 as wholebody_to_308  # tools/dataset_converters
import numpy as np
import pytest

from sapiens2_mm.evaluation.metrics.pose import (
    KeypointOKSMetric,
    Keypoints308Metric,
    load_keypoints308_info,
)

from .test_pose_data import (
    COCO17_JSON,
    COCO17_SIGMAS,
    WHOLEBODY_JSON,
    load_json,
    perfect_predictions,
    perturbed_predictions,
    pycocotools_stats,
    run_metric,
)

FIELD308 = 'goliath_wholebody_kpts'
PARTS = ('body', 'foot', 'face', 'left_hand', 'right_hand')


def _ordered_dets(samples, index=None):
    """Result dicts in the order the metric keeps them (image of first
    appearance, instance id), score = bbox score."""
    per_img = defaultdict(list)
    for s in samples:
        per_img[s['img_id']].append(s)
    dets = []
    for img, ss in per_img.items():
        for s in sorted(ss, key=lambda s: s['id']):
            p = s['pred_instances']
            k = np.concatenate([
                p['keypoints'][0].astype(np.float64),
                p['keypoint_scores'][0, :, None].astype(np.float64)
            ], 1)
            if index is not None:
                k = k[index]
            dets.append(dict(image_id=img, category_id=1,
                             keypoints=k.reshape(-1).tolist(),
                             score=float(p['bbox_scores'][0])))
    return dets


def _stats(metrics):
    return np.array(list(metrics.values())[:10])


def _mmpose_coco_metric(ann_file, samples, sigmas, **kwargs):
    from mmpose.evaluation.metrics import CocoMetric
    metric = CocoMetric(ann_file=ann_file, **kwargs)
    meta = dict(num_keypoints=len(sigmas), sigmas=np.asarray(sigmas),
                dataset_name='test')
    with contextlib.redirect_stdout(io.StringIO()):
        return _stats(run_metric(metric, samples, meta=meta))


@pytest.fixture(scope='module')
def gt308(tmp_path_factory):
    """Converted COCO-WholeBody sample, with synthetic dense-face labels (the
    133 layout has none of the 238 face points) inside each valid face box."""
    gt = wholebody_to_308.convert(load_json(WHOLEBODY_JSON))
    src = {a['id']: a for a in load_json(WHOLEBODY_JSON)['annotations']}
    face = np.array(load_keypoints308_info()['groups']['face'])
    rng = np.random.default_rng(1)
    for ann in gt['annotations']:
        if not src[ann['id']]['face_valid']:
            continue
        x, y, w, h = src[ann['id']]['face_box']
        k = np.array(ann[FIELD308], dtype=np.float64).reshape(-1, 3)
        k[face, 0] = x + rng.uniform(0, w, len(face))
        k[face, 1] = y + rng.uniform(0, h, len(face))
        k[face, 2] = 2
        ann[FIELD308] = k.reshape(-1).tolist()
        ann['num_keypoints'] = int((k[:, 2] > 0).sum())
    path = tmp_path_factory.mktemp('gt308') / 'gt308.json'
    path.write_text(json.dumps(gt))
    return str(path), gt


def _layout_json(gt, index, path):
    """Copy of ``gt`` whose ``keypoints`` hold the ``index`` subset of the 308
    field, with ``num_keypoints`` recounted (what COCOeval reads)."""
    out = json.loads(json.dumps(gt))
    for ann in out['annotations']:
        k = np.array(ann[FIELD308]).reshape(-1, 3)[index]
        ann['keypoints'] = k.reshape(-1).tolist()
        ann['num_keypoints'] = int((k[:, 2] > 0).sum())
    path.write_text(json.dumps(out))
    return str(path)


@pytest.mark.parametrize('seed,noise', [(0, 0.03), (1, 0.06), (2, 0.015)])
def test_coco17_equals_pycocotools(seed, noise):
    samples = perturbed_predictions(load_json(COCO17_JSON), seed=seed,
                                    noise=noise)
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS,
                               score_mode='bbox', nms_mode='none')
    ours = _stats(run_metric(metric, samples))
    ref = pycocotools_stats(COCO17_JSON, _ordered_dets(samples), COCO17_SIGMAS)
    assert 0.05 < ours[0] < 0.95  # a non-trivial operating point
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize('seed,noise', [(0, 0.03), (3, 0.06)])
def test_coco17_equals_mmpose_coco_metric(seed, noise):
    """Full pipeline: bbox_keypoint scoring + OKS-NMS + COCOeval."""
    samples = perturbed_predictions(load_json(COCO17_JSON), seed=seed,
                                    noise=noise)
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS)
    ours = _stats(run_metric(metric, samples))
    ref = _mmpose_coco_metric(COCO17_JSON, samples, COCO17_SIGMAS)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6)
    # the duplicates must have been removed by NMS: without it AP differs
    no_nms = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS,
                               nms_mode='none')
    assert abs(_stats(run_metric(no_nms, samples))[0] - ours[0]) > 1e-3


def test_coco17_mmpose_box_areas():
    """With boxes in the samples, mmpose uses bbox_scales for NMS areas and the
    box for the detection area; the two options reproduce that."""
    samples = perturbed_predictions(load_json(COCO17_JSON), seed=4)
    rng = np.random.default_rng(4)
    for s in samples:
        xy = s['pred_instances']['keypoints'][0]
        lo, hi = xy.min(0), xy.max(0)
        s['pred_instances']['bboxes'] = np.concatenate([lo, hi])[None] * [
            0.9, 0.9, 1.1, 1.1]
        s['gt_instances']['bbox_scales'] = (hi - lo)[None] * rng.uniform(
            1.0, 1.5)
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS,
                               nms_area_source='bbox_scale',
                               det_area_source='bbox')
    ours = _stats(run_metric(metric, samples))
    ref = _mmpose_coco_metric(COCO17_JSON, samples, COCO17_SIGMAS)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6)


def test_gt_from_raw_ann_info_equals_ann_file():
    gt = load_json(COCO17_JSON)
    anns = defaultdict(list)
    for a in gt['annotations']:
        anns[a['image_id']].append(a)
    samples = perturbed_predictions(gt, seed=5)
    for s in samples:
        s['raw_ann_info'] = anns[s['img_id']]
        s['ori_shape'] = (480, 640)
    a = run_metric(KeypointOKSMetric(ann_file=COCO17_JSON,
                                     sigmas=COCO17_SIGMAS), samples)
    b = run_metric(KeypointOKSMetric(sigmas=COCO17_SIGMAS), samples)
    np.testing.assert_allclose(_stats(a), _stats(b), rtol=0, atol=1e-12)


def test_sigmas_from_dataset_meta():
    samples = perturbed_predictions(load_json(COCO17_JSON), seed=6)
    a = run_metric(KeypointOKSMetric(ann_file=COCO17_JSON), samples,
                   meta=dict(sigmas=COCO17_SIGMAS, dataset_name='coco'))
    b = run_metric(KeypointOKSMetric(ann_file=COCO17_JSON,
                                     sigmas=COCO17_SIGMAS), samples)
    np.testing.assert_allclose(_stats(a), _stats(b), rtol=0, atol=0)


def test_perfect_predictions_ap_one(gt308):
    path, gt = gt308
    metric = Keypoints308Metric(ann_file=path)
    res = run_metric(metric, perfect_predictions(gt, FIELD308))
    for key in ['AP', 'AP .5', 'AP .75', 'AR'] + [f'{p}/AP' for p in PARTS]:
        assert res[key] == pytest.approx(1.0, abs=1e-12), key
    gt17 = load_json(COCO17_JSON)
    res = run_metric(KeypointOKSMetric(ann_file=COCO17_JSON,
                                       sigmas=COCO17_SIGMAS),
                     perfect_predictions(gt17))
    assert res['AP'] == pytest.approx(1.0, abs=1e-12)


def test_308_whole_body_equals_xtcocotools_via_mmpose(gt308, tmp_path):
    """All 308 keypoints, full official pipeline, vs mmpose CocoMetric
    (xtcocotools COCOeval, 308 sigmas) on a json whose ``keypoints`` hold the
    308 field."""
    path, gt = gt308
    sigmas = load_keypoints308_info()['sigmas']
    ref_json = _layout_json(gt, np.arange(308), tmp_path / 'all.json')
    for seed in (0, 1):
        samples = perturbed_predictions(gt, field=FIELD308, seed=seed,
                                        noise=sigmas)
        ours = run_metric(Keypoints308Metric(ann_file=path), samples)
        ref = _mmpose_coco_metric(ref_json, samples, sigmas)
        assert 0.05 < ours['AP'] < 0.95
        np.testing.assert_allclose(_stats(ours), ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize('part', PARTS)
def test_308_parts_equal_pycocotools(gt308, tmp_path, part):
    """Each part: pycocotools COCOeval with the part's sigmas on the part's
    keypoints (GT and predictions sliced)."""
    path, gt = gt308
    info = load_keypoints308_info()
    index = np.array(info['groups'][part])
    samples = perturbed_predictions(gt, field=FIELD308, seed=7,
                                    noise=info['sigmas'])
    ours = run_metric(Keypoints308Metric(ann_file=path, nms_mode='none',
                                         score_mode='bbox'), samples)
    ref_json = _layout_json(gt, index, tmp_path / f'{part}.json')
    ref = pycocotools_stats(ref_json, _ordered_dets(samples, index),
                            info['sigmas'][index])
    assert ours[f'{part}/AP'] == pytest.approx(ref[0], abs=1e-6)
    assert ours[f'{part}/AR'] == pytest.approx(ref[5], abs=1e-6)
    assert ref[0] > 0.05


def test_generic_metric_with_133_wholebody_fields():
    """The 133-keypoint COCO-WholeBody layout (several fields) with parts
    equals pycocotools on the body part and the whole body."""
    from mmpose.datasets.datasets.utils import parse_pose_metainfo
    meta = parse_pose_metainfo(
        dict(from_file='configs/_base_/datasets/coco_wholebody.py'))
    sigmas = meta['sigmas'].astype(np.float64)
    fields = ['keypoints', 'foot_kpts', 'face_kpts', 'lefthand_kpts',
              'righthand_kpts']
    gt = load_json(WHOLEBODY_JSON)
    for a in gt['annotations']:
        a['wb'] = sum((a[f] for f in fields), [])
    samples = perturbed_predictions(gt, field='wb', seed=8, noise=0.03)
    metric = KeypointOKSMetric(ann_file=WHOLEBODY_JSON, sigmas=sigmas,
                               gt_keypoint_field=fields,
                               parts=dict(body=range(17)),
                               score_mode='bbox', nms_mode='none')
    ours = run_metric(metric, samples)
    body = pycocotools_stats(WHOLEBODY_JSON, _ordered_dets(samples,
                                                           np.arange(17)),
                             sigmas[:17])
    assert ours['body/AP'] == pytest.approx(body[0], abs=1e-6)


def test_crowd_and_more_than_20_detections(tmp_path):
    """A crowd GT (can absorb several detections) and 28 detections on one
    image (only the 20 best count) against pycocotools."""
    gt = load_json(COCO17_JSON)
    gt['annotations'][4]['iscrowd'] = 1
    path = tmp_path / 'crowd.json'
    path.write_text(json.dumps(gt))
    samples = perturbed_predictions(gt, seed=9, false_positives=0)
    rng = np.random.default_rng(9)
    crowd = gt['annotations'][4]
    for j in range(25):
        src = samples[4]['pred_instances']
        samples.append(dict(
            id=3 * 10**8 + j, img_id=crowd['image_id'], category_id=1,
            pred_instances=dict(
                keypoints=src['keypoints'] + rng.normal(0, 3, (1, 17, 2)),
                keypoint_scores=src['keypoint_scores'],
                bbox_scores=rng.uniform(0.1, 1.0, 1))))
    metric = KeypointOKSMetric(ann_file=str(path), sigmas=COCO17_SIGMAS,
                               score_mode='bbox', nms_mode='none')
    ours = _stats(run_metric(metric, samples))
    ref = pycocotools_stats(str(path), _ordered_dets(samples), COCO17_SIGMAS)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6)
    # chunking images differently does not change anything
    metric = KeypointOKSMetric(ann_file=str(path), sigmas=COCO17_SIGMAS,
                               score_mode='bbox', nms_mode='none')
    import sapiens2_mm.evaluation.metrics.pose.keypoint_oks_metric as mod
    from sapiens2_mm.evaluation.metrics.pose import coco_keypoint_eval
    orig = mod.coco_keypoint_eval
    try:
        mod.coco_keypoint_eval = lambda *a, **k: coco_keypoint_eval(
            *a, chunk_elements=1, **k)
        small = _stats(run_metric(metric, samples))
    finally:
        mod.coco_keypoint_eval = orig
    np.testing.assert_array_equal(small, ours)


def _mmpose_alignment_samples(gt):
    """The data of mmpose's ``test_topdown_alignment`` (CocoMetric tests): one
    float32 prediction per GT, keypoints scaled by (0.98, 1.02), scores
    0.8 x visibility, box score 0.98, boxes and bbox_scales (1.25 x box)."""
    samples = []
    for ann in gt['annotations']:
        w, h = ann['bbox'][2], ann['bbox'][3]
        k = np.array(ann['keypoints'], dtype=np.float32).reshape(1, -1, 3)
        k[..., 0] *= 0.98
        k[..., 1] *= 1.02
        k[..., 2] *= 0.8
        samples.append(dict(
            id=ann['id'], img_id=ann['image_id'],
            gt_instances=dict(
                bbox_scales=np.array([w * 1.25, h * 1.25]).reshape(-1, 2),
                bbox_scores=np.ones((1, ), dtype=np.float32) * 0.98,
                bboxes=np.array(ann['bbox'], dtype=np.float32).reshape(-1, 4)),
            pred_instances=dict(keypoints=k[..., :2],
                                keypoint_scores=k[..., -1])))
    return samples


@pytest.mark.parametrize('score_mode', ['bbox_keypoint', 'bbox_rle',
                                        'keypoint'])
def test_mmpose_topdown_alignment_case(score_mode):
    """mmpose's own alignment case: with bbox_rle the float32 instance
    scores of several people tie, and OKS-NMS keeps the instance mmpose keeps
    only if the scores are computed in mmpose's dtypes (mmpose's test pins
    AP 0.50050 for bbox_rle; float64 scoring gave 0.49749)."""
    samples = _mmpose_alignment_samples(load_json(COCO17_JSON))
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS,
                               score_mode=score_mode,
                               nms_area_source='bbox_scale')
    ours = _stats(run_metric(metric, samples))
    ref = _mmpose_coco_metric(COCO17_JSON, samples, COCO17_SIGMAS,
                              score_mode=score_mode)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9)
    if score_mode == 'bbox_rle':
        assert ours[0] == pytest.approx(0.5004950495049505, abs=1e-12)


def _two_detection_case(tmp_path):
    """One person; detection 1 (lower id) is 20 px off, detection 2 is exact.
    With box-scale areas of 1000 x 1000 their OKS for NMS is > 0.9, while
    detection 1 matches the GT (area 5000) at no OKS threshold. The keypoint
    scores differ by one float32 ulp in one non-maximal keypoint: the float32
    mean / sum ties, the float64 one does not."""
    xy = np.stack([np.linspace(200, 300, 17), np.linspace(100, 300, 17)], 1)
    gt = dict(images=[dict(id=1, width=640, height=480)],
              categories=[dict(id=1, name='person')],
              annotations=[dict(
                  id=1, image_id=1, category_id=1, iscrowd=0, area=5000.0,
                  bbox=[190.0, 90.0, 120.0, 220.0], num_keypoints=17,
                  keypoints=np.concatenate([xy, np.full((17, 1), 2)],
                                           1).reshape(-1).tolist())])
    path = tmp_path / 'one_person.json'
    path.write_text(json.dumps(gt))
    scores = np.full(17, 0.5, np.float32)
    scores[0] = 0.75
    tied = scores.copy()
    tied[5] = np.nextafter(np.float32(0.5), np.float32(1))
    samples = []
    for inst_id, shift, kpt_scores in ((1, 20.0, tied), (2, 0.0, scores)):
        samples.append(dict(
            id=inst_id, img_id=1, category_id=1,
            gt_instances=dict(
                bbox_scales=np.array([[1000.0, 1000.0]]),
                bbox_scores=np.array([0.98], np.float32)),
            pred_instances=dict(
                keypoints=(xy + shift).astype(np.float32)[None],
                keypoint_scores=kpt_scores[None])))
    return str(path), samples, (tied, scores)


@pytest.mark.parametrize('score_mode', ['bbox_rle', 'keypoint'])
def test_float32_score_ties_as_mmpose(tmp_path, score_mode):
    path, samples, (tied, scores) = _two_detection_case(tmp_path)
    # the case is what it claims: ties in float32, not in float64
    box = np.float32(0.98)
    assert box + np.mean(tied) + np.max(tied) == \
        box + np.mean(scores) + np.max(scores)
    assert np.mean(tied.astype(np.float64)) > np.mean(scores.astype(
        np.float64))
    metric = KeypointOKSMetric(ann_file=path, sigmas=COCO17_SIGMAS,
                               score_mode=score_mode,
                               nms_area_source='bbox_scale')
    ours = _stats(run_metric(metric, samples))
    ref = _mmpose_coco_metric(path, samples, COCO17_SIGMAS,
                              score_mode=score_mode)
    # mmpose keeps the exact detection (the later of two tied scores)
    assert ref[0] == pytest.approx(1.0)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9)


def _xtcocotools_stats(gt_path, dets, sigmas):
    """xtcocotools COCOeval stats (10,), the evaluator mmpose calls."""
    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(gt_path)
        ev = COCOeval(coco, coco.loadRes(dets), 'keypoints',
                      np.asarray(sigmas), True)
        ev.params.useSegm = None
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats)


def test_pycocotools_convention_equals_pycocotools(tmp_path):
    """Where the two COCOevals differ: detections whose keypoint scores are
    all 0 (xtcocotools drops them, pycocotools evaluates them) and a GT whose
    ``num_keypoints`` disagrees with its visibility flags (pycocotools reads
    ``num_keypoints``). Each convention equals its library."""
    gt = load_json(COCO17_JSON)
    gt['annotations'][5]['num_keypoints'] = 0   # 15 labelled keypoints
    gt['annotations'][3]['num_keypoints'] = 4   # none labelled
    path = tmp_path / 'inconsistent.json'
    path.write_text(json.dumps(gt))
    samples = perturbed_predictions(gt, seed=11, noise=0.03)
    for i in (0, 4, 9):  # accurate detections with all keypoint scores 0
        samples[i]['pred_instances']['keypoint_scores'][:] = 0
    dets = _ordered_dets(samples)
    results = {}
    for convention, ref_fn in (('pycocotools', pycocotools_stats),
                               ('xtcocotools', _xtcocotools_stats)):
        metric = KeypointOKSMetric(ann_file=str(path), sigmas=COCO17_SIGMAS,
                                   score_mode='bbox', nms_mode='none',
                                   coco_convention=convention)
        ours = _stats(run_metric(metric, samples))
        ref = ref_fn(str(path), dets, COCO17_SIGMAS)
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9,
                                   err_msg=convention)
        results[convention] = ours
    assert abs(results['pycocotools'][0] - results['xtcocotools'][0]) > 0.01
    # default: xtcocotools (mmpose's convention)
    default = KeypointOKSMetric(ann_file=str(path), sigmas=COCO17_SIGMAS,
                                score_mode='bbox', nms_mode='none')
    np.testing.assert_array_equal(_stats(run_metric(default, samples)),
                                  results['xtcocotools'])
    with pytest.raises(ValueError, match="coco_convention='coco'"):
        KeypointOKSMetric(coco_convention='coco')


def test_category_id_as_array_as_mmpose_packs_it():
    """mmpose's PackPoseInputs gives category_id as a one-element array; the
    metric must group by its value (this crashed tools/test.py on 308 configs
    with 'unhashable type: numpy.ndarray')."""
    gt17 = load_json(COCO17_JSON)
    samples = perfect_predictions(gt17)
    for s in samples:
        s['category_id'] = np.array([1])
    res = run_metric(KeypointOKSMetric(ann_file=COCO17_JSON,
                                       sigmas=COCO17_SIGMAS), samples)
    assert res['AP'] == pytest.approx(1.0, abs=1e-12)
