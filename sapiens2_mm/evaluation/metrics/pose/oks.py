"""Vectorised Object Keypoint Similarity (OKS) and OKS-NMS.

The formulas are the COCO ones (``cocoeval.computeOks`` of pycocotools and
xtcocotools, ``oks_nms`` of mmpose), written over whole arrays instead of one
(detection, ground truth) pair at a time. Element-wise operations are done in the
same order as the reference code so that the per-keypoint terms are bitwise equal.
"""
from typing import Optional, Sequence

import numpy as np

_EPS = np.spacing(1)


def keypoint_similarity_terms(
        det_xy: np.ndarray, gt_keypoints: np.ndarray, gt_areas: np.ndarray,
        gt_bboxes: np.ndarray, sigmas: np.ndarray) -> tuple:
    """Per-keypoint similarity ``exp(-e)`` of every (detection, GT) pair.

    ``e = d^2 / (2 sigma)^2 / (area + eps) / 2`` as in COCO. Two variants are
    returned: with ``d`` the distance to the GT keypoint (used for GTs with
    labelled keypoints) and with ``d`` the distance to the GT box enlarged to
    three times its size (COCO's rule for GTs without labelled keypoints).

    Args:
        det_xy: detections, shape (D, K, 2), image coordinates.
        gt_keypoints: GT keypoints, shape (G, K, 3) as (x, y, visibility).
        gt_areas: area used to normalise the distance, shape (G,).
        gt_bboxes: GT boxes (x, y, w, h), shape (G, 4).
        sigmas: per-keypoint sigmas, shape (K,).

    Returns:
        tuple: ``(sim, sim_box)``, each of shape (D, G, K).
    """
    variances = (sigmas * 2) ** 2
    norm = (gt_areas + _EPS)[None, :, None]
    xd = det_xy[:, None, :, 0]
    yd = det_xy[:, None, :, 1]
    dx = xd - gt_keypoints[None, :, :, 0]
    dy = yd - gt_keypoints[None, :, :, 1]
    sim = np.exp(-((dx ** 2 + dy ** 2) / variances / norm / 2))

    x0 = (gt_bboxes[:, 0] - gt_bboxes[:, 2])[None, :, None]
    x1 = (gt_bboxes[:, 0] + gt_bboxes[:, 2] * 2)[None, :, None]
    y0 = (gt_bboxes[:, 1] - gt_bboxes[:, 3])[None, :, None]
    y1 = (gt_bboxes[:, 1] + gt_bboxes[:, 3] * 2)[None, :, None]
    bdx = np.maximum(0, x0 - xd) + np.maximum(0, xd - x1)
    bdy = np.maximum(0, y0 - yd) + np.maximum(0, yd - y1)
    sim_box = np.exp(-((bdx ** 2 + bdy ** 2) / variances / norm / 2))
    return sim, sim_box


def part_oks(sim: np.ndarray, sim_box: np.ndarray, gt_visible: np.ndarray,
             index: np.ndarray) -> np.ndarray:
    """OKS of every (detection, GT) pair over a subset of the keypoints.

    Args:
        sim: per-keypoint similarity to the GT keypoints, shape (D, G, K).
        sim_box: per-keypoint similarity to the enlarged GT box, (D, G, K).
        gt_visible: GT keypoint labelled (visibility > 0), bool (G, K).
        index: keypoint ids of the subset, shape (Kp,).

    Returns:
        np.ndarray: OKS, shape (D, G). A GT with labelled keypoints in the
        subset is compared on those only; a GT without any uses the box
        distance over all ``Kp`` keypoints (COCO rule).
    """
    vis = gt_visible[:, index]
    count = vis.sum(axis=1)
    oks_vis = (sim[:, :, index] * vis[None]).sum(axis=-1) / np.maximum(count, 1)
    oks_box = sim_box[:, :, index].mean(axis=-1)
    return np.where(count[None] > 0, oks_vis, oks_box)


def oks_nms(keypoints: np.ndarray, scores: np.ndarray, areas: np.ndarray,
            sigmas: np.ndarray, thr: float) -> np.ndarray:
    """Greedy OKS non-maximum suppression of the instances of one image.

    Same rule as mmpose's ``oks_nms`` (and the official Sapiens2 evaluator): the
    highest-scoring remaining instance is kept and every instance whose OKS with
    it is above ``thr`` is dropped. OKS here uses all keypoints and the mean of
    the two instances' areas. The pairwise OKS matrix is computed once.

    Args:
        keypoints: instances, shape (N, K, 2) or (N, K, 3) (extra column
            ignored).
        scores: instance scores, shape (N,).
        areas: instance areas, shape (N,).
        sigmas: per-keypoint sigmas, shape (K,).
        thr: OKS threshold; instances with OKS <= thr survive.

    Returns:
        np.ndarray: indices of the kept instances, in the order they were kept
        (descending score).
    """
    n = len(scores)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    variances = (sigmas * 2) ** 2
    xy = np.asarray(keypoints, dtype=np.float64)[..., :2]
    dx = xy[None, :, :, 0] - xy[:, None, :, 0]
    dy = xy[None, :, :, 1] - xy[:, None, :, 1]
    mean_area = (areas[:, None] + areas[None, :]) / 2 + _EPS
    e = (dx ** 2 + dy ** 2) / variances / mean_area[..., None] / 2
    # mmpose stores the OKS in float32 before comparing it with ``thr``; keep
    # that rounding so borderline pairs are suppressed identically.
    ovr = (np.exp(-e).sum(axis=-1) / e.shape[-1]).astype(np.float32)
    # Same ordering call as mmpose (descending, ties as numpy's default sort).
    order = np.argsort(scores)[::-1]
    keep = []
    suppressed = np.zeros(n, dtype=bool)
    for i in order:
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= ovr[i] > thr
    return np.asarray(keep, dtype=np.int64)


def instance_scores(keypoint_scores: np.ndarray, bbox_scores: np.ndarray,
                    mode: str = 'bbox_keypoint', thr: float = 0.2
                    ) -> np.ndarray:
    """Score of each instance from its box score and keypoint scores.

    Args:
        keypoint_scores: shape (N, K).
        bbox_scores: shape (N,).
        mode: ``'bbox_keypoint'`` (official: box score times the mean of the
            keypoint scores above ``thr``, 0 when none is), ``'bbox'``,
            ``'keypoint'`` (mean of all keypoint scores) or ``'bbox_rle'``
            (box score + mean + max of the keypoint scores, as mmpose).
        thr: keypoint score threshold of ``'bbox_keypoint'``.

    Returns:
        np.ndarray: shape (N,), float64.
    """
    kpt = np.asarray(keypoint_scores, dtype=np.float64)
    box = np.asarray(bbox_scores, dtype=np.float64).reshape(-1)
    if mode == 'bbox':
        return box.copy()
    if mode == 'keypoint':
        return kpt.mean(axis=1)
    if mode == 'bbox_rle':
        return box + kpt.mean(axis=1) + kpt.max(axis=1)
    if mode != 'bbox_keypoint':
        raise ValueError(
            f"score_mode={mode!r} is not supported; use one of 'bbox', "
            "'bbox_keypoint', 'keypoint', 'bbox_rle'.")
    above = kpt > thr
    count = above.sum(axis=1)
    mean = np.where(above, kpt, 0).sum(axis=1) / np.maximum(count, 1)
    return box * np.where(count > 0, mean, 0.0)


def as_index(values: Optional[Sequence[int]], num_keypoints: int,
             name: str) -> np.ndarray:
    """Check a list of keypoint ids and return it as an int64 array."""
    index = np.asarray(values, dtype=np.int64).reshape(-1)
    if index.size == 0 or index.min() < 0 or index.max() >= num_keypoints:
        raise ValueError(
            f'part {name!r} has keypoint ids {index.tolist()[:10]}..., '
            f'expected a non-empty list of ids in [0, {num_keypoints}).')
    return index
