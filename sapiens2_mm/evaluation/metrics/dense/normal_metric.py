"""Surface-normal angular errors: the official NormalEvaluator and extras."""
from typing import Any, Dict, List, Sequence

import numpy as np
import torch
from mmengine.logging import print_log

from sapiens2_mm.registry import METRICS

from .base_dense_metric import BaseDenseMetric, EmptyMaskError
from .geometry import angles_deg, unit_vectors
from .sample_access import (
    as_compute_dtype,
    match_size,
    read_mask,
    read_pixels,
    sample_name,
)

WORST_ANGLE_DEG = 180.0


def unit_length_official(pred: torch.Tensor) -> torch.Tensor:
    """(3, h, w) normals made unit length before a resize, as the official
    demo does (``n / max(|n|, 1e-8)``)."""
    return unit_vectors(pred, dim=0, eps=1e-8)


def threshold_key(threshold: float) -> str:
    """``within_<t>_deg`` with the dot replaced (5.0 -> ``within_5_0_deg``)."""
    return f'within_{str(float(threshold)).replace(".", "_")}_deg'


@METRICS.register_module()
class NormalMetric(BaseDenseMetric):
    """Angular error of predicted surface normals over the GT mask.

    Official metrics (``NormalEvaluator``, dataset-level over all valid
    pixels): ``normal_mae`` (mean angle, degrees), ``normal_rmse``,
    ``normal_median_deg`` (centre of the 0.5-degree histogram bin where the
    CDF reaches N/2) and ``within_<t>_deg`` (% of pixels with angle < t).

    Extras: ``extra/within_<t>_deg`` for ``extra_angle_thresholds`` (%),
    ``extra/normal_median_exact_deg`` (the exact median of all valid-pixel
    angles, mean of the two middle values for an even count; needs 4 bytes
    per valid pixel until the end of the evaluation, ``exact_median=False``
    turns it off) and ``extra/normal_mae_per_image`` (mean over images of the
    per-image mean angle).

    Predictions and GT are normalized (``v / max(||v||, 1e-6)``), so
    non-unit GT normals (e.g. after a bilinear resize) are accepted as
    directions. GT normals inside the mask that are not finite or shorter
    than ``min_gt_norm`` carry no direction: those pixels are left out and
    their number is logged (the official evaluator would score a zero GT as
    90 degrees). Angles are computed in float32 as officially. A non-finite
    predicted normal (NaN / inf) scores the worst angle, 180 degrees
    (before, NaN fell into histogram bin 0: the best median); their number is
    reported as ``extra/nonfinite_pred_pixels`` with a warning.

    Data sample fields: ``pred_normal`` (3, H, W), ``gt_normal`` (3, H, W),
    ``gt_mask`` (1, H, W) (all valid when absent).

    Args:
        angle_thresholds: official thresholds in degrees.
        extra_angle_thresholds: further thresholds, reported as extras.
        hist_bin_size_deg: histogram bin of the official median.
        hist_max_deg: histogram range (angles above go to the last bin).
        exact_median: report ``extra/normal_median_exact_deg``.
        min_gt_norm: GT normals shorter than this inside the mask are invalid.
        **kwargs: :class:`BaseDenseMetric` options (``pred_resize``,
            ``duplicate_samples``, ``empty_mask``, ``collect_device``,
            ``prefix``).
    """

    nonfinite_rule = 'scored as 180 degrees (the worst angle)'

    def __init__(self,
                 angle_thresholds: Sequence[float] = (5.0, 11.25, 22.5, 30.0),
                 extra_angle_thresholds: Sequence[float] = (7.5, ),
                 hist_bin_size_deg: float = 0.5,
                 hist_max_deg: float = 180.0,
                 exact_median: bool = True,
                 min_gt_norm: float = 1e-3,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.angle_thresholds = [float(t) for t in angle_thresholds]
        self.extra_angle_thresholds = [float(t) for t in extra_angle_thresholds]
        if hist_bin_size_deg <= 0 or hist_max_deg <= 0:
            raise ValueError('hist_bin_size_deg and hist_max_deg must be > 0, '
                             f'got {hist_bin_size_deg} and {hist_max_deg}.')
        self.hist_bin_size_deg = float(hist_bin_size_deg)
        self.num_bins = int(np.ceil(hist_max_deg / hist_bin_size_deg))
        self.exact_median = exact_median
        self.min_gt_norm = float(min_gt_norm)

    def _score_sample(self, sample: Any) -> Dict[str, Any]:
        gt = as_compute_dtype(read_pixels(sample, 'gt_normal'))
        if gt.shape[0] != 3:
            raise ValueError(f'{sample_name(sample)}: gt_normal must have 3 '
                             f'channels, got {tuple(gt.shape)}.')
        size = tuple(gt.shape[-2:])
        pred = as_compute_dtype(read_pixels(sample, 'pred_normal'))
        if pred.shape[0] != 3:
            raise ValueError(f'{sample_name(sample)}: pred_normal must have 3 '
                             f'channels, got {tuple(pred.shape)}.')
        pred = match_size(
            pred, size, sample, self.pred_resize, 'pred_normal',
            prepare=(unit_length_official
                     if self.pred_resize_order == 'official' else None))
        mask = read_mask(sample, size).to(gt.device)
        # (N, 3) pixel vectors first: norms over a contiguous last axis are
        # much faster than over the channel axis of (3, H, W).
        gt_px = gt.permute(1, 2, 0)[mask]
        pred_px = pred.to(gt).permute(1, 2, 0)[mask]
        gt_len = gt_px.norm(dim=1)
        usable = torch.isfinite(gt_len) & (gt_len >= self.min_gt_norm)
        invalid_gt = int((~usable).sum())
        num = int(usable.sum())
        if num == 0:
            raise EmptyMaskError(sample_name(sample))
        if invalid_gt:
            gt_px, pred_px = gt_px[usable], pred_px[usable]
        angle = angles_deg(unit_vectors(pred_px, dim=1),
                           unit_vectors(gt_px, dim=1))  # (N,) float32
        nonfinite = ~torch.isfinite(pred_px).all(dim=1)
        angle = torch.where(nonfinite | ~torch.isfinite(angle),
                            angle.new_tensor(WORST_ANGLE_DEG), angle)
        bins = torch.floor(angle / self.hist_bin_size_deg).long().clamp_(
            0, self.num_bins - 1)
        angle64 = angle.double()
        record = dict(
            sum_angle=float(angle64.sum()),
            sum_angle_sq=float((angle64 * angle64).sum()),
            num=num,
            within=[int((angle < t).sum()) for t in self.angle_thresholds],
            extra_within=[
                int((angle < t).sum()) for t in self.extra_angle_thresholds
            ],
            hist=torch.bincount(bins, minlength=self.num_bins).cpu().numpy(),
            invalid_gt=invalid_gt,
            nonfinite_pred=int(nonfinite.sum()))
        if self.exact_median:
            record['angles'] = angle.cpu().numpy()
        return record

    def _reduce(self, records: List[Dict[str, Any]]) -> Dict[str, float]:
        num = sum(r['num'] for r in records)
        invalid = sum(r['invalid_gt'] for r in records)
        if invalid:
            print_log(f'NormalMetric: left out {invalid} mask pixel(s) whose '
                      'GT normal is not finite or shorter than '
                      f'{self.min_gt_norm}.', logger='current', level=30)
        hist = np.sum([r['hist'] for r in records], axis=0)
        cdf = np.cumsum(hist)
        bin_idx = min(int(np.searchsorted(cdf, 0.5 * num, side='left')),
                      self.num_bins - 1)
        metrics: Dict[str, float] = dict(
            normal_mae=sum(r['sum_angle'] for r in records) / num,
            normal_median_deg=(bin_idx + 0.5) * self.hist_bin_size_deg,
            normal_rmse=float(
                np.sqrt(sum(r['sum_angle_sq'] for r in records) / num)))
        for j, t in enumerate(self.angle_thresholds):
            count = sum(r['within'][j] for r in records)
            metrics[threshold_key(t)] = 100.0 * count / num
        for j, t in enumerate(self.extra_angle_thresholds):
            count = sum(r['extra_within'][j] for r in records)
            metrics['extra/' + threshold_key(t)] = 100.0 * count / num
        if self.exact_median:
            metrics['extra/normal_median_exact_deg'] = float(
                np.median(np.concatenate([r['angles'] for r in records])))
        metrics['extra/normal_mae_per_image'] = float(
            np.mean([r['sum_angle'] / r['num'] for r in records]))
        return metrics
