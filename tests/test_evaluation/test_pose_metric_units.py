"""Instance scoring, OKS-NMS and COCO matching on small analytic cases; bad
input errors of the pose metrics."""
import json

import numpy as np
import pytest

from sapiens2_mm.evaluation.metrics.pose import (
    KeypointOKSMetric,
    Keypoints308Metric,
    coco_keypoint_eval,
    instance_scores,
    oks_nms,
)
from sapiens2_mm.evaluation.metrics.pose.coco_keypoint_eval import (
    ImageDet,
    ImageGT,
)

from .test_pose_data import (
    COCO17_JSON,
    COCO17_SIGMAS,
    load_json,
    perturbed_predictions,
    run_metric,
)


def test_instance_score_bbox_keypoint():
    kpt = np.array([[0.1, 0.3, 0.5, 0.2],   # 0.2 is not above the threshold
                    [0.1, 0.0, 0.2, 0.15],  # none above -> 0
                    [1.0, 1.0, 1.0, 1.0]])
    box = np.array([0.5, 0.9, 0.8])
    got = instance_scores(kpt, box, 'bbox_keypoint', 0.2)
    np.testing.assert_allclose(got, [0.5 * 0.4, 0.0, 0.8])
    np.testing.assert_allclose(instance_scores(kpt, box, 'bbox'), box)
    np.testing.assert_allclose(instance_scores(kpt, box, 'keypoint'),
                               kpt.mean(1))
    with pytest.raises(ValueError, match="score_mode='foo'"):
        instance_scores(kpt, box, 'foo')


def test_oks_nms_analytic():
    """K=1, sigma 0.5 -> var = 1; area 1 each: OKS = exp(-d^2 / 2)."""
    sig = np.array([0.5])
    # OKS(0,1) = exp(-0.01) = 0.990 > 0.9 -> 1 suppressed by 0;
    # OKS(0,2) = exp(-0.5*0.49) = 0.78 -> kept; OKS(2,3)=exp(-0.5*0.04)=0.98
    kpts = np.array([[[0.0, 0.0]], [[0.1414213562, 0.0]], [[0.7, 0.0]],
                     [[0.9, 0.0]]])
    scores = np.array([0.9, 0.8, 0.7, 0.95])
    keep = oks_nms(kpts, scores, np.ones(4), sig, 0.9)
    # order by score: 3 (keeps, suppresses 2), 0 (keeps, suppresses 1)
    assert keep.tolist() == [3, 0]
    # threshold above every OKS keeps all, in descending score order
    assert oks_nms(kpts, scores, np.ones(4), sig, 0.999).tolist() == [
        3, 0, 1, 2]
    # the area is the mean of the pair: larger areas -> larger OKS
    keep = oks_nms(kpts[[0, 2]], scores[[0, 2]], np.array([1.0, 100.0]), sig,
                   0.9)
    assert keep.tolist() == [0]  # exp(-0.49/2/50.5) > 0.9
    assert oks_nms(np.zeros((0, 1, 2)), np.zeros(0), np.zeros(0), sig,
                   0.9).size == 0


def _one_image(gt_xy, gt_vis, det_xy, det_scores, area=1e4, crowd=None):
    g = len(gt_xy)
    gt = ImageGT(
        keypoints=np.concatenate([gt_xy, gt_vis[..., None]], -1),
        areas=np.full(g, float(area)),
        bboxes=np.tile([0.0, 0.0, 100.0, 100.0], (g, 1)),
        iscrowd=np.zeros(g, bool) if crowd is None else np.asarray(crowd))
    det = ImageDet(
        keypoints=np.concatenate(
            [det_xy, np.ones(det_xy.shape[:2] + (1, ))], -1),
        scores=np.asarray(det_scores, float),
        areas=np.full(len(det_xy), float(area)))
    return {(1, 1): gt}, {(1, 1): det}


def test_coco_eval_analytic_precision():
    """Two people, three detections: best-scored is a false positive.

    Precision/recall at every threshold: FP, TP, TP -> precision 1/2, 2/3 at
    recall 0.5, 1.0; interpolated precision is 2/3 at all 101 recall points
    -> AP = 2/3, AR = 1.
    """
    sig = np.full(2, 0.1)
    gt_xy = np.array([[[10., 10.], [20., 20.]], [[60., 60.], [70., 70.]]])
    det_xy = np.array([[[40., 90.], [90., 40.]], gt_xy[0], gt_xy[1]])
    gts, dets = _one_image(gt_xy, np.full((2, 2), 2.0), det_xy,
                           [0.9, 0.8, 0.7])
    stats = coco_keypoint_eval(gts, dets, sig, {'all': np.arange(2)})['all']
    assert stats[0] == pytest.approx(2 / 3)
    assert stats[5] == pytest.approx(1.0)
    # the FP scored lowest instead: AP 1
    dets[(1, 1)].scores[:] = [0.1, 0.8, 0.7]
    stats = coco_keypoint_eval(gts, dets, sig, {'all': np.arange(2)})['all']
    assert stats[0] == pytest.approx(1.0)


def test_coco_eval_ignored_and_part_rules():
    """A GT without labelled keypoints in a part is ignored for that part, and
    a detection whose keypoint scores in a part are all 0 is left out."""
    sig = np.full(4, 0.1)
    gt_xy = np.array([[[10., 10.], [20., 20.], [30., 30.], [40., 40.]]])
    vis = np.array([[2.0, 2.0, 0.0, 0.0]])  # part b unlabelled
    gts, dets = _one_image(gt_xy, vis, gt_xy.copy(), [0.9])
    parts = {'a': np.array([0, 1]), 'b': np.array([2, 3])}
    out = coco_keypoint_eval(gts, dets, sig, parts)
    assert out['a'][0] == pytest.approx(1.0)
    assert out['b'][0] == -1  # no GT to evaluate the part on
    # zero scores in part a -> detection dropped there -> AP 0 (recall 0)
    dets[(1, 1)].keypoints[0, :2, 2] = 0
    out = coco_keypoint_eval(gts, dets, sig, parts)
    assert out['a'][0] == 0 and out['a'][5] == 0


# ------------------------------------------------------------------ bad input
def test_wrong_keypoint_count_in_predictions():
    samples = perturbed_predictions(load_json(COCO17_JSON))
    metric = Keypoints308Metric(ann_file=COCO17_JSON)
    with pytest.raises(ValueError, match='predictions have 17 keypoints but '
                       'the metric has 308 sigmas'):
        metric.process([], samples[:1])
    bad = dict(samples[0], pred_instances=dict(
        keypoints=np.zeros((1, 17, 3)), keypoint_scores=np.zeros((1, 17))))
    with pytest.raises(ValueError, match=r'must be \(N, K, 2\)'):
        KeypointOKSMetric(sigmas=COCO17_SIGMAS).process([], [bad])
    with pytest.raises(ValueError, match='no `pred_instances`'):
        KeypointOKSMetric(sigmas=COCO17_SIGMAS).process([], [dict(img_id=1)])


def test_gt_missing_keypoint_field():
    samples = perturbed_predictions(load_json(COCO17_JSON))
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS,
                               gt_keypoint_field='goliath_wholebody_kpts')
    with pytest.raises(KeyError, match="no 'goliath_wholebody_kpts' field"):
        run_metric(metric, samples)


def test_gt_keypoint_count_mismatch(tmp_path):
    gt = load_json(COCO17_JSON)
    gt['annotations'][3]['keypoints'] = gt['annotations'][3]['keypoints'][:-3]
    path = tmp_path / 'bad.json'
    path.write_text(json.dumps(gt))
    metric = KeypointOKSMetric(ann_file=str(path), sigmas=COCO17_SIGMAS)
    with pytest.raises(ValueError, match='hold 48 values, expected 51'):
        run_metric(metric, perturbed_predictions(load_json(COCO17_JSON)))


def test_empty_results_and_bad_args(tmp_path):
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS)
    with pytest.raises(ValueError, match='got no predictions'):
        metric.compute_metrics([])
    with pytest.raises(FileNotFoundError, match='does not exist'):
        KeypointOKSMetric(ann_file=str(tmp_path / 'missing.json'))
    with pytest.raises(ValueError, match='needs outfile_prefix'):
        KeypointOKSMetric(format_only=True)
    with pytest.raises(ValueError, match="nms_mode='soft'"):
        KeypointOKSMetric(nms_mode='soft')
    with pytest.raises(ValueError, match='has no sigmas'):
        run_metric(KeypointOKSMetric(ann_file=COCO17_JSON),
                   perturbed_predictions(load_json(COCO17_JSON)))
    with pytest.raises(ValueError, match='num_keypoints=17'):
        Keypoints308Metric().dataset_meta = dict(num_keypoints=17)


def test_prediction_on_unknown_image():
    samples = perturbed_predictions(load_json(COCO17_JSON))
    samples[0]['img_id'] = 123456789
    metric = KeypointOKSMetric(ann_file=COCO17_JSON, sigmas=COCO17_SIGMAS)
    with pytest.raises(ValueError, match='img_id=123456789 .* not in the '
                       'ground truth'):
        run_metric(metric, samples)


def test_format_only_writes_results(tmp_path):
    samples = perturbed_predictions(load_json(COCO17_JSON))
    prefix = str(tmp_path / 'res')
    metric = KeypointOKSMetric(sigmas=COCO17_SIGMAS, format_only=True,
                               outfile_prefix=prefix)
    assert run_metric(metric, samples) == {}
    res = load_json(prefix + '.keypoints.json')
    assert len(res) > 0 and len(res[0]['keypoints']) == 51
    assert len(res) < len(samples)  # OKS-NMS removed the duplicates


def test_instance_scores_bitwise_equal_mmpose_arithmetic():
    """mmpose CocoMetric's scoring written out (per-keypoint loop starting
    from the int 0, np.mean / np.max on the float32 rows): equal bit for bit
    on float32 inputs with float32 and float64 box scores."""
    rng = np.random.default_rng(0)
    kpt = rng.uniform(0, 1, (6, 308)).astype(np.float32)
    kpt[1] = 0.1  # none above the threshold
    for box in (rng.uniform(0.3, 1, 6).astype(np.float32), np.ones(6)):
        expected = {'bbox': [], 'keypoint': [], 'bbox_rle': [],
                    'bbox_keypoint': []}
        for k, b in zip(kpt, box):
            expected['bbox'].append(b)
            expected['keypoint'].append(np.mean(k))
            expected['bbox_rle'].append(float(b + np.mean(k) + np.max(k)))
            total, num = 0, 0
            for j in range(len(k)):
                if k[j] > 0.2:
                    total += k[j]
                    num += 1
            if num != 0:
                total /= num
            expected['bbox_keypoint'].append(b * total)
        for mode, values in expected.items():
            got = instance_scores(kpt, box, mode, 0.2)
            ref = np.array(values)
            assert got.dtype == ref.dtype, mode
            np.testing.assert_array_equal(got, ref, err_msg=mode)
