"""Vectorised Object Keypoint Similarity (OKS) and OKS-NMS.

The formulas are the COCO ones (``cocoeval.computeOks`` of pycocotools and
xtcocotools, ``oks_nms`` of mmpose), written over whole arrays instead of one
(detection, ground truth) pair at a time. Element-wise operations are done in the
same order as the reference code so that the per-keypoint terms are bitwise equal.
"""
from typing import Optional, Sequence

import numpy as np

_EPS = np.spacing(1)


def _similarity(dx: np.ndarray, dy: np.ndarray, areas: np.ndarray,
                variances: np.ndarray) -> np.ndarray:
    """``exp(-(dx^2 + dy^2) / var / (area + eps) / 2)``, in place on dx.

    The operations are those of COCOeval, in the same order, so each term is
    bitwise equal to the reference one.
    """
    e = np.square(dx, out=dx)
    e += np.square(dy, out=dy)
    e /= variances
    e /= (areas + _EPS)[:, None]
    e /= 2
    np.negative(e, out=e)
    return np.exp(e, out=e)


def pair_similarity(det_xy: np.ndarray, gt_xy: np.ndarray, areas: np.ndarray,
                    sigmas: np.ndarray) -> np.ndarray:
    """Per-keypoint OKS term ``exp(-e)`` of N (detection, GT) pairs.

    ``e = d^2 / (2 sigma)^2 / (area + eps) / 2`` with ``d`` the distance to the
    GT keypoint (COCO, for GTs with labelled keypoints).

    Args:
        det_xy: detection keypoints, shape (N, K, 2).
        gt_xy: GT keypoints, shape (N, K, 2).
        areas: GT areas, shape (N,).
        sigmas: per-keypoint sigmas, shape (K,).

    Returns:
        np.ndarray: shape (N, K).
    """
    variances = (sigmas * 2) ** 2
    return _similarity(det_xy[..., 0] - gt_xy[..., 0],
                       det_xy[..., 1] - gt_xy[..., 1], areas, variances)


def pair_box_similarity(det_xy: np.ndarray, gt_bboxes: np.ndarray,
                        areas: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """Per-keypoint OKS term for GTs without labelled keypoints.

    COCO's rule: ``d`` is the distance from the detected keypoint to the GT box
    enlarged to three times its size (0 inside it).

    Args:
        det_xy: detection keypoints, shape (N, K, 2).
        gt_bboxes: GT boxes (x, y, w, h), shape (N, 4).
        areas: GT areas, shape (N,).
        sigmas: per-keypoint sigmas, shape (K,).

    Returns:
        np.ndarray: shape (N, K).
    """
    variances = (sigmas * 2) ** 2
    x0 = (gt_bboxes[:, 0] - gt_bboxes[:, 2])[:, None]
    x1 = (gt_bboxes[:, 0] + gt_bboxes[:, 2] * 2)[:, None]
    y0 = (gt_bboxes[:, 1] - gt_bboxes[:, 3])[:, None]
    y1 = (gt_bboxes[:, 1] + gt_bboxes[:, 3] * 2)[:, None]
    xd, yd = det_xy[..., 0], det_xy[..., 1]
    dx = np.maximum(0, x0 - xd) + np.maximum(0, xd - x1)
    dy = np.maximum(0, y0 - yd) + np.maximum(0, yd - y1)
    return _similarity(dx, dy, areas, variances)


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
    if n <= 1:
        return np.arange(n, dtype=np.int64)
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

    The arithmetic is mmpose ``CocoMetric``'s, in the dtypes of the inputs
    (float32 model outputs stay float32 where mmpose keeps them so): instance
    scores that tie there tie here too, so OKS-NMS keeps the same instance and
    COCOeval ranks the detections in the same order.

    * ``'bbox'``: the box score.
    * ``'keypoint'``: ``np.mean`` of the keypoint scores (input dtype).
    * ``'bbox_rle'``: ``box + mean + max`` of the keypoint scores, summed in
      the promoted input dtype (float32 for float32 inputs).
    * ``'bbox_keypoint'`` (official): box score times the mean of the keypoint
      scores above ``thr`` (compared in float64), 0 when none is; the
      keypoint scores are summed one after another in float64, as mmpose's
      loop does.

    Args:
        keypoint_scores: shape (N, K), or a list of N (K,) arrays.
        bbox_scores: shape (N,), or a list of N scalars.
        mode: one of the modes above.
        thr: keypoint score threshold of ``'bbox_keypoint'``.

    Returns:
        np.ndarray: shape (N,), the dtype mmpose's score list would have as
        an array (float64, or float32 for ``'bbox'`` / ``'keypoint'`` with
        float32 inputs).
    """
    if mode not in ('bbox', 'bbox_keypoint', 'keypoint', 'bbox_rle'):
        raise ValueError(
            f"score_mode={mode!r} is not supported; use one of 'bbox', "
            "'bbox_keypoint', 'keypoint', 'bbox_rle'.")
    kpts = [np.asarray(k).reshape(-1) for k in keypoint_scores]
    boxes = [np.asarray(b).reshape(()) for b in bbox_scores]
    boxes = [b[()] for b in boxes]  # numpy scalars keep their dtype
    if len(kpts) != len(boxes):
        raise ValueError(
            f'{len(kpts)} keypoint score rows but {len(boxes)} bbox scores; '
            'give one box score per instance.')
    scores = []
    for kpt, box in zip(kpts, boxes):
        if mode == 'bbox':
            scores.append(box)
        elif mode == 'keypoint':
            scores.append(np.mean(kpt))
        elif mode == 'bbox_rle':
            scores.append(float(box + np.mean(kpt) + np.max(kpt)))
        else:
            # float64 comparison with thr (numpy scalars compare so) and a
            # sequential float64 sum (cumsum), not numpy's pairwise sum
            above = kpt.astype(np.float64) > thr
            count = int(above.sum())
            if count == 0:
                scores.append(box * 0)
                continue
            total = np.cumsum(np.where(above, kpt, 0).astype(np.float64))[-1]
            scores.append(box * (total / count))
    return np.array(scores) if scores else np.zeros(0)


def as_index(values: Optional[Sequence[int]], num_keypoints: int,
             name: str) -> np.ndarray:
    """Check a list of keypoint ids and return it as an int64 array."""
    index = np.asarray(values, dtype=np.int64).reshape(-1)
    if index.size == 0 or index.min() < 0 or index.max() >= num_keypoints:
        raise ValueError(
            f'part {name!r} has keypoint ids {index.tolist()[:10]}..., '
            f'expected a non-empty list of ids in [0, {num_keypoints}).')
    return index
