"""Shared helpers for the pose metric tests: perturbed GT predictions.

Not a test module by itself; the helpers build mmpose-style data samples from
COCO-format ground truth with a fixed seed.
"""
import json
import os.path as osp

import numpy as np

from tests.conftest import COCO_DIR

COCO17_JSON = osp.join(COCO_DIR, 'test_coco.json')
WHOLEBODY_JSON = osp.join(COCO_DIR, 'test_coco_wholebody.json')
COCO17_SIGMAS = np.array([
    .26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87,
    .87, .89, .89
]) / 10.0


def load_json(path):
    with open(path) as f:
        return json.load(f)


def perturbed_predictions(gt: dict, field='keypoints', seed=0, noise=0.06,
                          drop=0.15, duplicates=3, false_positives=2,
                          replicate=1):
    """One predicted instance per GT annotation (as a top-down model with GT
    boxes gives), with noise, dropped keypoints and random scores.

    Args:
        gt: COCO dataset dict.
        field: annotation field of the keypoints.
        noise: keypoint noise std relative to sqrt(area); a scalar or one
            value per keypoint (e.g. proportional to the sigmas).
        drop: fraction of keypoints moved far away with a low score.
        duplicates: extra near-duplicate instances (OKS-NMS must remove them).
        false_positives: extra random instances.
        replicate: the predictions are made ``replicate`` times with image
            ids ``img_id + r * 10**7`` (for the benchmark).

    Returns:
        list[dict]: mmpose-style data sample dicts (numpy arrays).
    """
    rng = np.random.default_rng(seed)
    samples = []
    for r in range(replicate):
        for ann in gt['annotations']:
            k = np.asarray(ann[field], dtype=np.float64).reshape(-1, 3)
            x, y, w, h = ann['bbox']
            scale = np.sqrt(max(ann['area'], 1.0))
            std = np.broadcast_to(np.asarray(noise) * scale, (len(k), ))
            xy = k[:, :2] + rng.normal(0, 1, (len(k), 2)) * std[:, None]
            unlabelled = k[:, 2] == 0
            xy[unlabelled] = [x, y] + rng.uniform(0, 1, (unlabelled.sum(), 2)) * [
                w, h]
            scores = rng.uniform(0.25, 1.0, len(k))
            dropped = rng.uniform(0, 1, len(k)) < drop
            xy[dropped] += rng.normal(0, scale, (dropped.sum(), 2))
            scores[dropped] = rng.uniform(0.0, 0.2, dropped.sum())
            scores[unlabelled] *= 0.5
            samples.append(_sample(ann['id'] + r * 10**9,
                                   ann['image_id'] + r * 10**7, xy, scores,
                                   rng.uniform(0.5, 1.0)))
        for j in range(duplicates):
            src = samples[-1 - j]
            xy = src['pred_instances']['keypoints'][0] + rng.normal(0, 0.5, (
                len(k), 2))
            samples.append(_sample(
                10**8 + r * 1000 + j, src['img_id'], xy,
                src['pred_instances']['keypoint_scores'][0] * 0.9,
                float(src['pred_instances']['bbox_scores'][0])))
        for j in range(false_positives):
            img = gt['images'][j % len(gt['images'])]
            xy = rng.uniform(0, 1, (len(k), 2)) * [img['width'], img['height']]
            samples.append(_sample(2 * 10**8 + r * 1000 + j,
                                   img['id'] + r * 10**7, xy,
                                   rng.uniform(0, 1, len(k)),
                                   rng.uniform(0.2, 0.9)))
    return samples


def perfect_predictions(gt: dict, field='keypoints'):
    """GT keypoints as predictions with score 1 for every person with labelled
    keypoints (unlabelled keypoints at the box centre, as they are not scored;
    all at 0, 0 would make different people look alike to OKS-NMS)."""
    out = []
    for ann in gt['annotations']:
        k = np.asarray(ann[field], dtype=np.float64).reshape(-1, 3)
        if not (k[:, 2] > 0).any():
            continue
        x, y, w, h = ann['bbox']
        xy = np.where(k[:, 2:] > 0, k[:, :2], [x + w / 2, y + h / 2])
        out.append(_sample(ann['id'], ann['image_id'], xy, np.ones(len(k)),
                           1.0))
    return out


def _sample(inst_id, img_id, xy, scores, bbox_score):
    return dict(
        id=int(inst_id), img_id=int(img_id), category_id=1,
        pred_instances=dict(
            keypoints=np.asarray(xy, np.float32)[None],
            keypoint_scores=np.asarray(scores, np.float32)[None],
            bbox_scores=np.array([bbox_score], np.float32)),
        gt_instances=dict())


def replicate_gt(gt: dict, replicate: int, field='keypoints') -> dict:
    """The GT set repeated with image ids ``+ r * 10**7`` (ann ids ``+ r*1e9``)."""
    out = dict(gt, images=[], annotations=[])
    for r in range(replicate):
        out['images'] += [dict(i, id=i['id'] + r * 10**7) for i in gt['images']]
        out['annotations'] += [
            dict(a, id=a['id'] + r * 10**9, image_id=a['image_id'] + r * 10**7)
            for a in gt['annotations']
        ]
    return out


def run_metric(metric, samples, meta=None, batch=4):
    """Feed the samples through process() in batches and compute."""
    if meta is not None:
        metric.dataset_meta = meta
    for i in range(0, len(samples), batch):
        metric.process([], samples[i:i + batch])
    return metric.compute_metrics(metric.results)


def pycocotools_stats(gt_path, dets, sigmas, field='keypoints'):
    """pycocotools COCOeval stats (10,) for a list of result dicts."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(gt_path)
        if field != 'keypoints':
            for ann in coco.dataset['annotations']:
                ann['keypoints'] = ann[field]
            coco.createIndex()
        coco_dt = coco.loadRes(dets)
        ev = COCOeval(coco, coco_dt, 'keypoints')
        ev.params.kpt_oks_sigmas = np.asarray(sigmas)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats
