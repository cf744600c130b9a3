"""COCO keypoint AP/AR for any keypoint layout, several keypoint subsets at once.

This is the public COCO protocol (``COCOeval`` with ``iouType='keypoints'``:
greedy matching per OKS threshold 0.50:0.05:0.95, area ranges all/medium/large,
20 detections per image, 101-point interpolated precision) written with numpy
arrays. It is our own code rather than a call into pycocotools/xtcocotools
because (1) Sapiens2 evaluates six keypoint subsets (the 308 whole body and five
parts) and the official release needs a private xtcocotools fork for that, while
here the per-keypoint similarities are computed once and shared by all subsets;
(2) the reference implementations loop in Python over every (detection, GT) pair
and convert json lists for each, which is slow for 308 keypoints.

Conventions follow xtcocotools (used by mmpose and by the official evaluator):
a GT is ignored when it is a crowd or has no labelled keypoint (visibility > 0)
in the evaluated subset, and a detection is left out of a subset when all its
keypoint scores in that subset are 0. With complete annotations this equals
pycocotools (which reads ``num_keypoints`` instead).
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from .oks import keypoint_similarity_terms, part_oks

IOU_THRS = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1,
                       endpoint=True)
REC_THRS = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1,
                       endpoint=True)
AREA_RANGES = ((0 ** 2, 1e5 ** 2), (32 ** 2, 96 ** 2), (96 ** 2, 1e5 ** 2))
STAT_NAMES = ('AP', 'AP .5', 'AP .75', 'AP (M)', 'AP (L)', 'AR', 'AR .5',
              'AR .75', 'AR (M)', 'AR (L)')


@dataclass
class ImageGT:
    """Ground truth of one (image, category).

    Attributes:
        keypoints: (G, K, 3) x, y, visibility.
        areas: (G,) area used by OKS and the area ranges.
        bboxes: (G, 4) x, y, w, h.
        iscrowd: (G,) bool.
    """
    keypoints: np.ndarray
    areas: np.ndarray
    bboxes: np.ndarray
    iscrowd: np.ndarray


@dataclass
class ImageDet:
    """Detections of one (image, category), in the order they were produced.

    Attributes:
        keypoints: (D, K, 3) x, y, keypoint score.
        scores: (D,) instance scores.
        areas: (D,) or (P, D) area of each detection for the area ranges
            (per part when it depends on the keypoint subset).
    """
    keypoints: np.ndarray
    scores: np.ndarray
    areas: np.ndarray


@dataclass
class _Accum:
    scores: List[np.ndarray] = field(default_factory=list)
    selected: List[np.ndarray] = field(default_factory=list)
    matched: List[np.ndarray] = field(default_factory=list)
    ignored: List[np.ndarray] = field(default_factory=list)
    num_gt: Optional[np.ndarray] = None


def _match_image(ious: np.ndarray, det_valid: np.ndarray, gt_ignore: np.ndarray,
                 iscrowd: np.ndarray) -> tuple:
    """COCO greedy matching, vectorised over (part, area range, threshold).

    Args:
        ious: (P, D, G) OKS, detections sorted by descending score.
        det_valid: (P, D) detection takes part in the part's evaluation.
        gt_ignore: (P, A, G) GT ignored for (part, area range).
        iscrowd: (G,) bool.

    Returns:
        tuple: ``matched`` and ``matched_ignored`` of shape (P, A, T, D).
    """
    num_parts, num_det, num_gt = ious.shape
    num_area = gt_ignore.shape[1]
    num_thr = len(IOU_THRS)
    shape = (num_parts, num_area, num_thr)
    matched = np.zeros(shape + (num_det,), dtype=bool)
    matched_ig = np.zeros(shape + (num_det,), dtype=bool)
    if num_gt == 0 or num_det == 0:
        return matched, matched_ig
    thr = np.minimum(IOU_THRS, 1 - 1e-10)[None, None, :, None]
    ig = gt_ignore[:, :, None, :]
    gt_taken = np.zeros(shape + (num_gt,), dtype=bool)
    rev = slice(None, None, -1)
    for d in range(num_det):
        iou = ious[:, d][:, None, None, :]
        ok = (~gt_taken | iscrowd) & (iou >= thr)
        ok &= det_valid[:, d][:, None, None, None]
        # COCO takes the best (last on ties) non-ignored GT over the threshold
        # and falls back to ignored GTs only when there is none.
        ok_reg = ok & ~ig
        has_reg = ok_reg.any(axis=-1, keepdims=True)
        cand = np.where(has_reg, ok_reg, ok & ig)
        found = cand.any(axis=-1)
        vals = np.where(cand, iou, -np.inf)
        best = num_gt - 1 - np.argmax(vals[..., rev], axis=-1)
        best_onehot = np.zeros_like(gt_taken)
        np.put_along_axis(best_onehot, best[..., None], found[..., None], -1)
        gt_taken |= best_onehot
        matched[..., d] = found
        matched_ig[..., d] = found & np.take_along_axis(
            np.broadcast_to(ig, gt_taken.shape), best[..., None], -1)[..., 0]
    return matched, matched_ig


def _accumulate(acc: _Accum, num_parts: int) -> tuple:
    """Precision (P, T, R, A) and recall (P, T, A) over all images."""
    num_area, num_thr, num_rec = len(AREA_RANGES), len(IOU_THRS), len(REC_THRS)
    precision = -np.ones((num_parts, num_thr, num_rec, num_area))
    recall = -np.ones((num_parts, num_thr, num_area))
    if not acc.scores:
        return precision, recall
    scores = np.concatenate(acc.scores)
    selected = np.concatenate(acc.selected, axis=-1)  # (P, N)
    matched = np.concatenate(acc.matched, axis=-1)  # (P, A, T, N)
    ignored = np.concatenate(acc.ignored, axis=-1)
    for p in range(num_parts):
        sel = selected[p]
        s = scores[sel]
        order = np.argsort(-s, kind='mergesort')
        for a in range(num_area):
            npig = acc.num_gt[p, a]
            if npig == 0:
                continue
            m = matched[p, a][:, sel][:, order]
            ig = ignored[p, a][:, sel][:, order]
            tp = np.cumsum(m & ~ig, axis=1).astype(np.float64)
            fp = np.cumsum(~m & ~ig, axis=1).astype(np.float64)
            nd = tp.shape[1]
            if nd == 0:
                recall[p, :, a] = 0
                precision[p, :, :, a] = 0
                continue
            rc = tp / npig
            pr = tp / (fp + tp + np.spacing(1))
            recall[p, :, a] = rc[:, -1]
            # precision envelope: pr[i] = max(pr[i:])
            pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
            for t in range(num_thr):
                inds = np.searchsorted(rc[t], REC_THRS, side='left')
                q = np.zeros(num_rec)
                valid = inds < nd
                q[valid] = pr[t, inds[valid]]
                precision[p, t, :, a] = q
    return precision, recall


def _summarize(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """The 10 COCO keypoint stats from (T, R, K, A) precision and (T, K, A)."""

    def mean(x):
        x = x[x > -1]
        return -1.0 if x.size == 0 else float(np.mean(x))

    t50 = int(np.where(IOU_THRS == .5)[0][0])
    t75 = int(np.where(IOU_THRS == .75)[0][0])
    return np.array([
        mean(precision[..., 0]), mean(precision[t50, ..., 0]),
        mean(precision[t75, ..., 0]), mean(precision[..., 1]),
        mean(precision[..., 2]), mean(recall[..., 0]),
        mean(recall[t50, ..., 0]), mean(recall[t75, ..., 0]),
        mean(recall[..., 1]), mean(recall[..., 2])
    ])


def coco_keypoint_eval(gts: Dict[tuple, ImageGT], dets: Dict[tuple, ImageDet],
                       sigmas: np.ndarray, parts: Dict[str, np.ndarray],
                       max_dets: int = 20) -> Dict[str, np.ndarray]:
    """COCO keypoint evaluation of several keypoint subsets in one pass.

    Args:
        gts: GT per ``(category_id, image_id)``; every image of the GT set
            must be present (possibly with zero annotations).
        dets: detections per ``(category_id, image_id)``; keys must be in
            ``gts``.
        sigmas: per-keypoint sigmas, shape (K,).
        parts: subset name -> keypoint ids; each subset is evaluated as if
            COCOeval were run with ``sigmas[ids]`` on the sliced keypoints.
        max_dets: detections per image kept (highest scores), 20 in COCO.

    Returns:
        dict: subset name -> the 10 stats (AP, AP .5, AP .75, AP (M), AP (L),
        AR, AR .5, AR .75, AR (M), AR (L)), -1 where undefined.
    """
    names = list(parts)
    index = [np.asarray(parts[n], dtype=np.int64) for n in names]
    num_parts = len(names)
    sigmas = np.asarray(sigmas, dtype=np.float64)
    area_lo = np.array([a[0] for a in AREA_RANGES], dtype=np.float64)
    area_hi = np.array([a[1] for a in AREA_RANGES], dtype=np.float64)

    categories = sorted({k[0] for k in gts})
    precisions, recalls = [], []
    for cat in categories:
        acc = _Accum(num_gt=np.zeros((num_parts, len(AREA_RANGES)), np.int64))
        for key in sorted(k for k in gts if k[0] == cat):
            gt = gts[key]
            det = dets.get(key)
            num_gt = len(gt.areas)
            num_det = 0 if det is None else len(det.scores)
            if num_gt == 0 and num_det == 0:
                continue
            visible = gt.keypoints[..., 2] > 0 if num_gt else np.zeros(
                (0, len(sigmas)), bool)
            # GT ignore per (part, area range)
            no_kpt = np.stack([~visible[:, i].any(axis=1) for i in index])
            ignore = no_kpt | gt.iscrowd[None].astype(bool)
            out_rng = (gt.areas[None] < area_lo[:, None]) | (
                gt.areas[None] > area_hi[:, None])
            gt_ignore = ignore[:, None, :] | out_rng[None]  # (P, A, G)
            acc.num_gt += (~gt_ignore).sum(axis=-1)
            if num_det == 0:
                continue

            order = np.argsort(-det.scores, kind='mergesort')
            kpts = det.keypoints[order]
            scores = det.scores[order]
            det_areas = np.broadcast_to(det.areas, (num_parts, len(order))
                                        ) if det.areas.ndim == 1 else det.areas
            det_areas = det_areas[:, order]
            # a detection with all keypoint scores 0 in a part is dropped there
            has_score = np.stack(
                [(kpts[:, i, 2] > 0).any(axis=1) for i in index])
            rank = np.cumsum(has_score, axis=1) - 1
            det_valid = has_score & (rank < max_dets)

            if num_gt:
                sim, sim_box = keypoint_similarity_terms(
                    kpts[..., :2], gt.keypoints, gt.areas, gt.bboxes, sigmas)
                ious = np.stack(
                    [part_oks(sim, sim_box, visible, i) for i in index])
                matched, matched_ig = _match_image(
                    ious, det_valid, gt_ignore, gt.iscrowd.astype(bool))
            else:
                shape = (num_parts, len(AREA_RANGES), len(IOU_THRS), len(order))
                matched = np.zeros(shape, bool)
                matched_ig = np.zeros(shape, bool)
            det_out = (det_areas[:, None] < area_lo[None, :, None]) | (
                det_areas[:, None] > area_hi[None, :, None])  # (P, A, D)
            ignored = matched_ig | (~matched & det_out[:, :, None, :])
            acc.scores.append(scores)
            acc.selected.append(det_valid)
            acc.matched.append(matched)
            acc.ignored.append(ignored)
        precision, recall = _accumulate(acc, num_parts)
        precisions.append(precision)
        recalls.append(recall)

    if not categories:
        raise ValueError('The ground truth has no images; nothing to evaluate.')
    precision = np.stack(precisions, axis=3)  # (P, T, R, K, A)
    recall = np.stack(recalls, axis=2)  # (P, T, K, A)
    return {n: _summarize(precision[p], recall[p]) for p, n in enumerate(names)}
