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

Two conventions, chosen by ``convention`` (they differ only on incomplete
or inconsistent data):

* ``'xtcocotools'`` (default; xtcocotools' COCOeval, used by mmpose's
  ``CocoMetric`` and by the official Sapiens2 evaluator): a detection whose
  keypoint scores in the evaluated keypoints are all 0 is left out; a GT is
  ignored when it is a crowd or has no keypoint with visibility > 0 in the
  evaluated keypoints.
* ``'pycocotools'`` (pycocotools' COCOeval): every detection is evaluated,
  whatever its keypoint scores; a GT is ignored when it is a crowd or its
  annotation's ``num_keypoints`` is 0. For a subset of the keypoints (a part),
  and for annotations without ``num_keypoints``, the count of keypoints with
  visibility > 0 in the subset stands for ``num_keypoints`` (what COCOeval
  reads on a json sliced to the part with ``num_keypoints`` recounted).

Everything else (OKS, matching, area ranges, 20 detections per image,
101-point precision) is common to both and computed identically.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from .oks import pair_box_similarity, pair_similarity

CONVENTIONS = ('xtcocotools', 'pycocotools')

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
        num_keypoints: (G,) the annotations' ``num_keypoints``, -1 where an
            annotation has none; None when unknown (read by the
            ``'pycocotools'`` convention only).
    """
    keypoints: np.ndarray
    areas: np.ndarray
    bboxes: np.ndarray
    iscrowd: np.ndarray
    num_keypoints: Optional[np.ndarray] = None


@dataclass
class ImageDet:
    """Detections of one (image, category), in the order they were produced.

    Attributes:
        keypoints: (D, K, 3) x, y, keypoint score.
        scores: (D,) instance scores.
        areas: (D,) area of each detection for the area ranges, or None for
            the area of the bounding box of the evaluated keypoints (of each
            part), which is what COCO's ``loadRes`` computes for keypoint
            results without a box.
    """
    keypoints: np.ndarray
    scores: np.ndarray
    areas: Optional[np.ndarray] = None


def _pad(arrays: List[np.ndarray], size: int, fill: float = 0.0
         ) -> np.ndarray:
    """Stack arrays of shape (n_i, ...) into (len, size, ...), padded."""
    out = np.full((len(arrays), size) + arrays[0].shape[1:], fill,
                  dtype=np.float64)
    for i, a in enumerate(arrays):
        out[i, :len(a)] = a
    return out


def _match(ious: np.ndarray, det_valid: np.ndarray, gt_ignore: np.ndarray,
           iscrowd: np.ndarray) -> tuple:
    """COCO greedy matching, vectorised over (unit, part, area, threshold).

    Args:
        ious: (U, P, D, G) OKS, detections sorted by descending score, -inf
            for padded GTs.
        det_valid: (U, P, D) detection takes part in the part's evaluation.
        gt_ignore: (U, P, A, G) GT ignored for (part, area range).
        iscrowd: (U, G) bool.

    Returns:
        tuple: ``matched`` and ``matched_ignored`` of shape (U, P, A, T, D).
    """
    num_units, num_parts, num_det, num_gt = ious.shape
    shape = (num_units, num_parts, gt_ignore.shape[2], len(IOU_THRS))
    matched = np.zeros(shape + (num_det, ), dtype=bool)
    matched_ig = np.zeros(shape + (num_det, ), dtype=bool)
    if num_gt == 0 or num_det == 0:
        return matched, matched_ig
    thr = np.minimum(IOU_THRS, 1 - 1e-10)[:, None]  # (T, 1)
    ig = gt_ignore[:, :, :, None, :]  # (U, P, A, 1, G)
    crowd = iscrowd[:, None, None, None, :]
    gt_taken = np.zeros(shape + (num_gt, ), dtype=bool)
    gt_pos = np.arange(num_gt)
    for d in range(num_det):
        iou = ious[:, :, d][:, :, None, None, :]  # (U, P, 1, 1, G)
        ok = (~gt_taken | crowd) & (iou >= thr)
        ok &= det_valid[:, :, d][:, :, None, None, None]
        # COCO takes the best (last on ties) non-ignored GT over the threshold
        # and falls back to ignored GTs only when there is none.
        ok_reg = ok & ~ig
        has_reg = ok_reg.any(axis=-1, keepdims=True)
        cand = np.where(has_reg, ok_reg, ok & ig)
        found = cand.any(axis=-1)
        vals = np.where(cand, iou, -np.inf)
        best = num_gt - 1 - np.argmax(vals[..., ::-1], axis=-1)
        hit = (gt_pos == best[..., None]) & found[..., None]
        gt_taken |= hit
        matched[..., d] = found
        matched_ig[..., d] = (hit & ig).any(axis=-1)
    return matched, matched_ig


def _pair_ious(dkp, gkp, garea, gbox, visible, vis_count, det_present,
               gt_present, sigmas, part_mat) -> np.ndarray:
    """OKS per part of every real (detection, GT) pair of a padded chunk.

    Returns:
        np.ndarray: (U, P, D, G), -inf for padded detections/GTs.
    """
    num_units, num_det = det_present.shape
    num_gt = gt_present.shape[1]
    u, d, g = np.nonzero(det_present[:, :, None] & gt_present[:, None, :])
    det_xy = dkp[u, d, :, :2]
    area = garea[u, g]
    count = vis_count[u, g]  # (N, P)
    sim = pair_similarity(det_xy, gkp[u, g, :, :2], area, sigmas)
    sim *= visible[u, g]
    oks = sim @ part_mat / np.maximum(count, 1)
    # GTs without labelled keypoints in a part: COCO's enlarged-box rule
    need_box = (count == 0).any(axis=1)
    if need_box.any():
        sel = np.nonzero(need_box)[0]
        box = pair_box_similarity(det_xy[sel], gbox[u[sel], g[sel]],
                                  area[sel], sigmas)
        oks_box = box @ part_mat / part_mat.sum(axis=0)
        oks[sel] = np.where(count[sel] > 0, oks[sel], oks_box)
    ious = np.full((num_units, part_mat.shape[1], num_det, num_gt), -np.inf)
    ious[u, :, d, g] = oks
    return ious


def _evaluate_units(gts: List[ImageGT], dets: List[Optional[ImageDet]],
                    sigmas: np.ndarray, index: List[np.ndarray],
                    max_dets: int, acc: '_Accum',
                    convention: str = 'xtcocotools') -> None:
    """Match the detections of a chunk of (image, category) units at once."""
    num_parts = len(index)
    area_lo = np.array([a[0] for a in AREA_RANGES])[:, None]
    area_hi = np.array([a[1] for a in AREA_RANGES])[:, None]
    part_mat = np.zeros((len(sigmas), num_parts))
    for p, i in enumerate(index):
        part_mat[i, p] = 1.0

    # ground truth, padded to G
    num_gt = max(len(g.areas) for g in gts)
    gt_n = np.array([len(g.areas) for g in gts])
    gt_present = np.arange(num_gt)[None] < gt_n[:, None]  # (U, G)
    if num_gt:
        gkp = _pad([g.keypoints for g in gts], num_gt)
        garea = _pad([g.areas for g in gts], num_gt, 1.0)
        gbox = _pad([g.bboxes for g in gts], num_gt)
        crowd = _pad([g.iscrowd for g in gts], num_gt) > 0
        visible = gkp[..., 2] > 0  # (U, G, K)
        vis_count = visible.astype(np.float64) @ part_mat  # (U, G, P)
        no_kpt = np.moveaxis(vis_count == 0, -1, 1)  # (U, P, G)
        if convention == 'pycocotools':
            # parts that are the whole layout read num_keypoints where given
            given = _pad([np.full(len(g.areas), -1.0) if g.num_keypoints is None
                          else np.asarray(g.num_keypoints, np.float64)
                          for g in gts], num_gt, -1.0)  # (U, G)
            for p, i in enumerate(index):
                if len(np.unique(i)) == len(sigmas):
                    no_kpt[:, p] = np.where(given >= 0, given == 0,
                                            no_kpt[:, p])
        ignore = no_kpt | crowd[:, None]
        out_rng = (garea[:, None] < area_lo) | (garea[:, None] > area_hi)
        gt_ignore = ignore[:, :, None] | out_rng[:, None]  # (U, P, A, G)
        counted = ~gt_ignore & gt_present[:, None, None]
        acc.num_gt += counted.sum(axis=(0, -1))
    num_det = max(0 if d is None else len(d.scores) for d in dets)
    if num_det == 0:
        return

    # detections sorted by score, padded to D
    kps, scores, areas, det_n = [], [], [], []
    for d in dets:
        if d is None or len(d.scores) == 0:
            kps.append(np.zeros((0, len(sigmas), 3)))
            scores.append(np.zeros(0))
            areas.append(np.zeros((0, num_parts)))
            det_n.append(0)
            continue
        order = np.argsort(-d.scores, kind='mergesort')
        kps.append(d.keypoints[order])
        scores.append(d.scores[order])
        areas.append(np.full((len(order), num_parts), np.nan)
                     if d.areas is None else
                     np.repeat(d.areas[order][:, None], num_parts, 1))
        det_n.append(len(order))
    det_n = np.array(det_n)
    dkp = _pad(kps, num_det)  # (U, D, K, 3)
    dscore = _pad(scores, num_det)
    darea = _pad(areas, num_det)  # (U, D, P)
    for p, i in enumerate(index):
        # area of the part's keypoint box where no detection area was given
        span = dkp[:, :, i, :2].max(axis=2) - dkp[:, :, i, :2].min(axis=2)
        darea[..., p] = np.where(np.isnan(darea[..., p]),
                                 span[..., 0] * span[..., 1], darea[..., p])
    darea = np.moveaxis(darea, -1, 1)  # (U, P, D)
    det_present = np.arange(num_det)[None] < det_n[:, None]  # (U, D)
    if convention == 'pycocotools':
        has_score = np.repeat(det_present[:, None], num_parts, 1)  # (U, P, D)
    else:
        # xtcocotools: a detection with all keypoint scores 0 in a part is
        # dropped there
        has_score = np.moveaxis(
            (dkp[..., 2] > 0).astype(np.float64) @ part_mat, -1, 1) > 0
        has_score &= det_present[:, None]
    rank = np.cumsum(has_score, axis=-1) - 1
    det_valid = has_score & (rank < max_dets)

    if num_gt:
        ious = _pair_ious(dkp, gkp, garea, gbox, visible, vis_count,
                          det_present, gt_present, sigmas, part_mat)
        matched, matched_ig = _match(ious, det_valid, gt_ignore, crowd)
    else:
        shape = (len(gts), num_parts, len(AREA_RANGES), len(IOU_THRS),
                 num_det)
        matched = np.zeros(shape, bool)
        matched_ig = np.zeros(shape, bool)
    det_out = (darea[:, :, None] < area_lo) | (darea[:, :, None] > area_hi)
    ignored = matched_ig | (~matched & det_out[:, :, :, None, :])
    keep = det_present.reshape(-1)
    acc.scores.append(dscore.reshape(-1)[keep])
    acc.selected.append(
        np.moveaxis(det_valid, 1, 0).reshape(num_parts, -1)[:, keep])
    for name, arr in (('matched', matched), ('ignored', ignored)):
        flat = np.moveaxis(arr, 0, 3).reshape(arr.shape[1:4] + (-1, ))
        getattr(acc, name).append(flat[..., keep])


@dataclass
class _Accum:
    scores: List[np.ndarray] = field(default_factory=list)
    selected: List[np.ndarray] = field(default_factory=list)
    matched: List[np.ndarray] = field(default_factory=list)
    ignored: List[np.ndarray] = field(default_factory=list)
    num_gt: Optional[np.ndarray] = None


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
                       max_dets: int = 20,
                       chunk_elements: int = 2 ** 22,
                       convention: str = 'xtcocotools'
                       ) -> Dict[str, np.ndarray]:
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
        chunk_elements: images are processed in chunks of about this many
            (detection, GT, keypoint) elements (memory/speed trade-off).
        convention: ``'xtcocotools'`` or ``'pycocotools'`` (module doc).

    Returns:
        dict: subset name -> the 10 stats (AP, AP .5, AP .75, AP (M), AP (L),
        AR, AR .5, AR .75, AR (M), AR (L)), -1 where undefined.
    """
    if not gts:
        raise ValueError('The ground truth has no images; nothing to evaluate.')
    if convention not in CONVENTIONS:
        raise ValueError(f'convention={convention!r} is not supported; use one '
                         f'of {list(CONVENTIONS)}.')
    names = list(parts)
    index = [np.asarray(parts[n], dtype=np.int64) for n in names]
    sigmas = np.asarray(sigmas, dtype=np.float64)
    num_kpts = len(sigmas)

    precisions, recalls = [], []
    for cat in sorted({k[0] for k in gts}):
        acc = _Accum(num_gt=np.zeros((len(names), len(AREA_RANGES)),
                                     np.int64))
        keys = sorted(k for k in gts if k[0] == cat)
        start = 0
        while start < len(keys):
            # grow the chunk while the padded OKS tensor stays small
            stop, max_g, max_d = start, 1, 1
            while stop < len(keys):
                key = keys[stop]
                g = max(max_g, len(gts[key].areas))
                d = max(max_d, 0 if key not in dets else len(dets[key].scores))
                if stop > start and (stop - start + 1) * g * d * num_kpts > \
                        chunk_elements:
                    break
                max_g, max_d, stop = g, d, stop + 1
            chunk = keys[start:stop]
            _evaluate_units([gts[k] for k in chunk],
                            [dets.get(k) for k in chunk], sigmas, index,
                            max_dets, acc, convention)
            start = stop
        precision, recall = _accumulate(acc, len(names))
        precisions.append(precision)
        recalls.append(recall)

    precision = np.stack(precisions, axis=3)  # (P, T, R, K, A)
    recall = np.stack(recalls, axis=2)  # (P, T, K, A)
    return {n: _summarize(precision[p], recall[p]) for p, n in enumerate(names)}
