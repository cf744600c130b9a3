"""Benchmark: Keypoints308Metric vs xtcocotools COCOeval with the 308 sigmas.

Synthetic but realistic data: the bundled COCO-WholeBody sample (4 images, 14
people) converted to the 308 layout (plus synthetic dense-face labels inside
each valid face box, since COCO-WholeBody has none of the 238 face points),
replicated ``--replicate`` times, with perturbed GT predictions (noise
proportional to each keypoint's sigma, dropped keypoints, near-duplicates,
false positives; fixed seed).

Both sides evaluate the same detections (after the official scoring and
OKS-NMS, done once by our metric and written as COCO results):

* ours: ``Keypoints308Metric.compute_metrics`` end to end (scoring, OKS-NMS,
  whole-body 308 AP/AR and the five parts in one pass);
* xtcocotools: ``COCOeval(gt, dt, 'keypoints', sigmas)`` ``loadRes`` +
  ``evaluate`` + ``accumulate`` + ``summarize``, once on the 308 keypoints and
  once per part on the part's keypoints (what the official evaluator does with
  its private fork), GT index built beforehand (not timed).

Prints both sets of numbers (they must be identical) and the timings.

Usage::

    python tools/benchmarks/keypoint_metric.py --replicate 100
"""
import argparse
import contextlib
import copy
import importlib.util
import io
import json
import os.path as osp
import tempfile
import time

import numpy as np
from mmengine.logging import MMLogger

from sapiens2_mm.evaluation.metrics.pose import (
    STAT_NAMES,
    Keypoints308Metric,
    load_keypoints308_info,
)

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FIELD = 'goliath_wholebody_kpts'


def _converter():
    path = osp.join(REPO, 'tools', 'dataset_converters',
                    'coco_wholebody_to_sapiens308.py')
    spec = importlib.util.spec_from_file_location('wb308', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_data(replicate: int, seed: int = 0):
    """GT dict (308 layout) and mmpose-style data samples."""
    info = load_keypoints308_info()
    src_path = osp.join(REPO, 'tests', 'data', 'coco_sample',
                        'test_coco_wholebody.json')
    with open(src_path) as f:
        src = json.load(f)
    base = _converter().convert(src)
    rng = np.random.default_rng(seed)
    face = np.array(info['groups']['face'])
    for ann, a_src in zip(base['annotations'], src['annotations']):
        if a_src['face_valid']:
            x, y, w, h = a_src['face_box']
            k = np.array(ann[FIELD], float).reshape(-1, 3)
            k[face] = np.stack([x + rng.uniform(0, w, len(face)),
                                y + rng.uniform(0, h, len(face)),
                                np.full(len(face), 2.0)], 1)
            ann[FIELD] = k.reshape(-1).tolist()
            ann['num_keypoints'] = int((k[:, 2] > 0).sum())
    gt = dict(base, images=[], annotations=[])
    samples = []
    sig = info['sigmas']
    for r in range(replicate):
        off_img, off_ann = r * 10**7, r * 10**9
        gt['images'] += [dict(i, id=i['id'] + off_img) for i in base['images']]
        for ann in base['annotations']:
            ann = dict(ann, id=ann['id'] + off_ann,
                       image_id=ann['image_id'] + off_img)
            gt['annotations'].append(ann)
            k = np.array(ann[FIELD], float).reshape(-1, 3)
            x, y, w, h = ann['bbox']
            s = np.sqrt(max(ann['area'], 1.0))
            xy = k[:, :2] + rng.normal(0, 1, (308, 2)) * (sig * s)[:, None]
            unl = k[:, 2] == 0
            xy[unl] = [x, y] + rng.uniform(0, 1, (unl.sum(), 2)) * [w, h]
            score = rng.uniform(0.25, 1.0, 308)
            drop = rng.uniform(0, 1, 308) < 0.15
            xy[drop] += rng.normal(0, s, (drop.sum(), 2))
            score[drop] = rng.uniform(0, 0.2, drop.sum())
            samples.append(_sample(ann['id'], ann['image_id'], xy, score,
                                   rng.uniform(0.5, 1.0)))
            if rng.uniform() < 0.3:  # near-duplicate for OKS-NMS
                samples.append(_sample(ann['id'] + 10**8, ann['image_id'],
                                       xy + rng.normal(0, 0.5, xy.shape),
                                       score * 0.9, rng.uniform(0.5, 1.0)))
        img = base['images'][r % len(base['images'])]
        samples.append(_sample(
            2 * 10**8 + r, img['id'] + off_img,
            rng.uniform(0, 1, (308, 2)) * [img['width'], img['height']],
            rng.uniform(0, 1, 308), rng.uniform(0.2, 0.9)))
    return gt, samples, info


def _sample(inst_id, img_id, xy, scores, bbox_score):
    return dict(id=int(inst_id), img_id=int(img_id), category_id=1,
                pred_instances=dict(
                    keypoints=np.asarray(xy, np.float32)[None],
                    keypoint_scores=np.asarray(scores, np.float32)[None],
                    bbox_scores=np.array([bbox_score], np.float32)))


def xtcocotools_stats(gt, dets, index, sigmas):
    """COCOeval on the ``index`` keypoints (GT and detections sliced)."""
    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval
    gt = copy.deepcopy(gt)
    for ann in gt['annotations']:
        k = np.array(ann[FIELD]).reshape(-1, 3)[index]
        ann['keypoints'] = k.reshape(-1).tolist()
        ann['num_keypoints'] = int((k[:, 2] > 0).sum())
    dets = [dict(d, keypoints=np.array(d[FIELD]).reshape(-1, 3)[index]
                 .reshape(-1).tolist()) for d in dets]
    for d in dets:
        d.pop(FIELD)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt
        coco.createIndex()
        start = time.perf_counter()
        ev = COCOeval(coco, coco.loadRes(dets), 'keypoints', sigmas[index],
                      use_area=True)
        ev.params.useSegm = None
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        elapsed = time.perf_counter() - start
    return ev.stats, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--replicate', type=int, default=100,
                        help='copies of the 4-image sample (default 100)')
    parser.add_argument('--repeat', type=int, default=3,
                        help='timed runs of our metric (best is reported)')
    args = parser.parse_args()

    MMLogger.get_instance('bench', log_level='WARNING')
    gt, samples, info = make_data(args.replicate)
    print(f'data: {len(gt["images"])} images, {len(gt["annotations"])} GT '
          f'people, {len(samples)} predictions, 308 keypoints')
    with tempfile.TemporaryDirectory() as tmp:
        ann_file = osp.join(tmp, 'gt.json')
        with open(ann_file, 'w') as f:
            json.dump(gt, f)
        # the kept detections, written once as COCO results for xtcocotools
        prefix = osp.join(tmp, 'res')
        writer = Keypoints308Metric(outfile_prefix=prefix, format_only=True)
        writer.process([], samples)
        writer.compute_metrics(writer.results)
        with open(prefix + '.keypoints.json') as f:
            dets = json.load(f)
        metric = Keypoints308Metric(ann_file=ann_file)
        metric.process([], samples)
        metric.compute_metrics(metric.results)  # warm-up, loads the GT json
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            ours = metric.compute_metrics(metric.results)
            times.append(time.perf_counter() - start)
    t_ours = min(times)
    print(f'{len(dets)} detections after scoring + OKS-NMS')

    parts = ['all', 'body', 'foot', 'face', 'left_hand', 'right_hand']
    index = dict(all=np.arange(308), **{p: np.array(info['groups'][p])
                                         for p in parts[1:]})
    t_xt, max_diff = 0.0, 0.0
    print(f'\n{"part":<11}{"metric":<7}{"ours":>12}{"xtcocotools":>14}')
    for p in parts:
        ref, elapsed = xtcocotools_stats(gt, dets, index[p], info['sigmas'])
        t_xt += elapsed
        if p == 'all':
            t_xt_all = elapsed
            mine = [ours[k] for k in STAT_NAMES]
            names = STAT_NAMES
            ref_vals = list(ref)
        else:
            mine = [ours[f'{p}/AP'], ours[f'{p}/AR']]
            names = ('AP', 'AR')
            ref_vals = [ref[0], ref[5]]
        for n, a, b in zip(names, mine, ref_vals):
            max_diff = max(max_diff, abs(a - b))
            print(f'{p:<11}{n:<7}{a:12.6f}{b:14.6f}')
    print(f'\nmax |ours - xtcocotools| = {max_diff:.2e}')
    print(f'ours (scoring + NMS + 308 + 5 parts, one pass): {t_ours:8.3f} s')
    print(f'xtcocotools, 308 keypoints only:                {t_xt_all:8.3f} s')
    print(f'xtcocotools, 308 + 5 parts (6 COCOeval runs):   {t_xt:8.3f} s')
    print(f'speed-up: {t_xt_all / t_ours:.1f}x vs the 308 run alone, '
          f'{t_xt / t_ours:.1f}x vs the six runs')


if __name__ == '__main__':
    main()
