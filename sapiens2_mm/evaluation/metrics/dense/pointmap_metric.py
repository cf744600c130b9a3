"""Pointmap errors: the official PointmapEvaluator, plus aligned pointmap and
depth errors, scale error and field-of-view error."""
import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
from mmengine.logging import print_log

from sapiens2_mm.registry import METRICS

from .alignment import ALIGNMENTS, align
from .base_dense_metric import BaseDenseMetric, EmptyMaskError, nonfinite_pixels
from .geometry import angles_deg, sobel_normals
from .geometry_errors import depth_errors, point_errors
from .normal_metric import threshold_key
from .sample_access import (
    as_compute_dtype,
    check_choice,
    match_size,
    read_mask,
    read_meta,
    read_pixels,
    sample_name,
)

_OFFICIAL_SUMS = ('l2', 'x_abs', 'y_abs', 'z_abs', 'sq_dist', 'angle',
                  'sq_angle')


def distance_key(threshold: float) -> str:
    """``within_<cm>_cm`` zero-padded to 2 digits (0.05 -> ``within_05_cm``).

    The official key is ``int(t * 100)``; rounding first gives the same keys
    for the official thresholds and the intended ones for e.g. 0.29.
    """
    return f'within_{int(round(threshold * 100)):02d}_cm'


def _scalar(value: Any) -> Optional[float]:
    if value is None:
        return None
    return float(np.asarray(
        value.detach().cpu() if hasattr(value, 'detach') else value).reshape(
            -1)[0])


def field_of_view_deg(focal: float, size: float) -> float:
    """Full field of view ``2 atan(size / (2 f))`` in degrees."""
    return math.degrees(2.0 * math.atan(size / (2.0 * focal)))


def _original_fx(sample: Any) -> Optional[float]:
    """fx of the original image: ``ori_cam_K``, or ``cam_K`` when the image
    was not resized (``img_shape == ori_shape``); None otherwise."""
    cam_k = read_meta(sample, 'ori_cam_K')
    if cam_k is None:
        cam_k = read_meta(sample, 'cam_K')
        img_shape = read_meta(sample, 'img_shape')
        ori_shape = read_meta(sample, 'ori_shape')
        if cam_k is None or (img_shape is not None and ori_shape is not None
                             and tuple(img_shape)[:2] != tuple(ori_shape)[:2]):
            return None
    return float(np.asarray(
        cam_k.detach().cpu() if hasattr(cam_k, 'detach') else cam_k,
        dtype=np.float64).reshape(3, 3)[0, 0])


@METRICS.register_module()
class PointmapMetric(BaseDenseMetric):
    """Pointmap metrics over the GT mask.

    Official metrics (``PointmapEvaluator``), dataset-level over all valid
    pixels, **in canonical units** against the canonical GT
    (``gt_pointmap``) with no alignment: ``l2_mean``, ``x_mae``, ``y_mae``,
    ``z_mae``, ``rmse`` (sqrt of the mean squared distance),
    ``within_05_cm`` / ``within_10_cm`` / ``within_20_cm`` (fractions, not %,
    of distances below 0.05 / 0.10 / 0.20 canonical units: metres only when
    fx = 768 in the letterboxed 1024x768 frame) and the angle error of Sobel
    normals of the full maps: ``normal_mae``, ``normal_rmse``,
    ``within_<t>_deg`` (fractions).

    Extras, in metres, per image then averaged over images (MoGe / Depth
    Anything conventions), for every alignment ``a`` in ``alignments``
    (see :mod:`.alignment`; fitted per image over the valid pixels):

    * ``pointmap_<a>/rel_p`` = mean ``||p^ - p|| / ||p||``,
      ``pointmap_<a>/delta1_p`` = mean ``[||p^ - p|| < 0.25 min(||p||, ||p^||)]``;
    * ``depth_<a>/abs_rel``, ``sq_rel``, ``rmse``, ``rmse_log``, ``silog``,
      ``d1``, ``d2``, ``d3`` (definitions of mmseg's ``DepthMetric``), with
      the aligned predicted depth clamped to ``>= min_pred_depth``;
    * ``extra/scale_rel_err`` = ``|s^ - s| / s`` (``pred_scale`` against
      ``canonical_scale``) and ``extra/fov_x_err_deg`` = horizontal field of
      view error, ``2 atan(W / 2f)`` with ``pred_focal_length`` against
      ``ori_cam_K[0, 0]``, both in pixels of the original image, W its width
      (``ori_shape``, else the GT width). ``cam_K`` is the network input's
      (after the test resize), so it is used only without ``ori_cam_K`` and
      when the image was not resized (``img_shape`` equal to ``ori_shape``).
      Averaged over the samples that carry the values (the number without
      them is logged).

    Data sample fields: ``pred_pointmap`` (3, H, W; metric by default, see
    ``pred_pointmap_space``), ``gt_pointmap`` (3, H, W canonical), ``gt_mask``;
    metainfo ``pred_scale``, ``canonical_scale`` (768 / fx); optionally
    ``pred_depth`` / ``gt_depth`` (1, H, W metric; else the z of the metric
    pointmaps), ``pred_focal_length``, ``ori_cam_K`` (or ``cam_K``),
    ``ori_shape``, ``img_shape``. Metric GT points are
    ``gt_pointmap / canonical_scale``. Pixels of the mask with non-finite GT
    are left out (logged); the extras also leave out GT depth <= 0.
    Non-finite predicted points (NaN / inf) are scored as they are: they
    make the distance means NaN or inf and count in no ``within_*``
    threshold (never a good score), and their pixels are counted in
    ``extra/nonfinite_pred_pixels`` with a warning.

    Args:
        distance_thresholds: official distance thresholds (canonical units).
        angle_thresholds: official normal-angle thresholds (degrees).
        alignments: alignments of the extras; ``()`` computes none of them.
        pred_pointmap_space: ``'metric'`` (the estimator's output:
            canonical / scale; the official metrics use ``pred * pred_scale``)
            or ``'canonical'`` (the network output; the extras use
            ``pred / pred_scale``).
        min_pred_depth: lower clamp of the aligned predicted depth.
        **kwargs: :class:`BaseDenseMetric` options.
    """

    def __init__(self,
                 distance_thresholds: Sequence[float] = (0.05, 0.10, 0.20),
                 angle_thresholds: Sequence[float] = (5.0, 11.25, 22.5, 30.0),
                 alignments: Sequence[str] = ALIGNMENTS,
                 pred_pointmap_space: str = 'metric',
                 min_pred_depth: float = 1e-6,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.distance_thresholds = [float(t) for t in distance_thresholds]
        self.angle_thresholds = [float(t) for t in angle_thresholds]
        if isinstance(alignments, str):
            alignments = (alignments, )
        for mode in alignments:
            check_choice('alignments entry', mode, ALIGNMENTS)
        self.alignments = tuple(alignments)
        check_choice('pred_pointmap_space', pred_pointmap_space,
                     ('metric', 'canonical'))
        self.pred_pointmap_space = pred_pointmap_space
        self.min_pred_depth = float(min_pred_depth)

    # -- per sample ------------------------------------------------------------
    def _pred_scale(self, sample: Any) -> float:
        scale = _scalar(read_meta(sample, 'pred_scale'))
        if scale is None or not math.isfinite(scale) or scale <= 0:
            raise ValueError(
                f'{sample_name(sample)}: pred_scale is {scale}; a finite '
                'positive predicted scale is needed to convert between '
                f'{self.pred_pointmap_space} and canonical pointmaps (set '
                "pred_pointmap_space to the space of pred_pointmap).")
        return scale

    def _score_sample(self, sample: Any) -> Dict[str, Any]:
        name = sample_name(sample)
        gt = as_compute_dtype(read_pixels(sample, 'gt_pointmap'))
        size = tuple(gt.shape[-2:])
        pred = as_compute_dtype(read_pixels(sample, 'pred_pointmap')).to(gt)
        for key, value in (('gt_pointmap', gt), ('pred_pointmap', pred)):
            if value.shape[0] != 3:
                raise ValueError(f'{name}: {key} must have 3 channels, got '
                                 f'{tuple(value.shape)}.')
        official = self.pred_resize_order == 'official'
        pred = match_size(pred, size, sample, self.pred_resize,
                          'pred_pointmap', smooth=official)
        mask = read_mask(sample, size).to(gt.device)
        finite = torch.isfinite(gt).all(dim=0)
        valid = mask & finite
        if not bool(valid.any()):
            raise EmptyMaskError(name)
        if self.pred_pointmap_space == 'metric':
            canonical_pred = pred * self._pred_scale(sample)
        else:
            canonical_pred = pred
        record = self._official_sums(canonical_pred, gt, valid)
        record['invalid_gt'] = int((mask & ~finite).sum())
        record['nonfinite_pred'] = nonfinite_pixels(pred, valid)
        if self.alignments:
            record['extras'] = self._extras(sample, pred, gt, valid)
        record.update(self._camera_errors(sample, size))
        return record

    def _official_sums(self, pred: torch.Tensor, gt: torch.Tensor,
                       valid: torch.Tensor) -> Dict[str, Any]:
        """Float32 per-pixel errors as officially, summed in float64."""
        pred_hw, gt_hw = pred.permute(1, 2, 0), gt.permute(1, 2, 0)
        diff = pred_hw[valid] - gt_hw[valid]
        dist = torch.norm(diff, dim=-1)
        axis = diff.abs().double()
        valid_np = valid.cpu().numpy()
        gt_n = torch.from_numpy(sobel_normals(gt_hw, valid_np))
        pred_n = torch.from_numpy(sobel_normals(pred_hw, valid_np))
        angle = angles_deg(pred_n, gt_n)
        dist64, angle64 = dist.double(), angle.double()
        sums = (dist64.sum(), axis[:, 0].sum(), axis[:, 1].sum(),
                axis[:, 2].sum(), (dist64 * dist64).sum(), angle64.sum(),
                (angle64 * angle64).sum())
        record = {k: float(v) for k, v in zip(_OFFICIAL_SUMS, sums)}
        record['num'] = int(dist.numel())
        record['dist_within'] = [
            int((dist < t).sum()) for t in self.distance_thresholds
        ]
        record['angle_within'] = [
            int((angle < t).sum()) for t in self.angle_thresholds
        ]
        return record

    def _extras(self, sample: Any, pred: torch.Tensor, gt: torch.Tensor,
                valid: torch.Tensor) -> Optional[Dict[str, float]]:
        """Aligned pointmap / depth errors of one image (None: no pixel)."""
        name = sample_name(sample)
        canonical_scale = _scalar(read_meta(sample, 'canonical_scale'))
        if canonical_scale is None or not canonical_scale > 0:
            raise ValueError(
                f'{name}: canonical_scale is {canonical_scale}; the metric '
                'extras need it (768 / fx) to bring gt_pointmap to metres. '
                'Set alignments=() to compute only the official metrics.')
        scale_hat = (self._pred_scale(sample)
                     if self.pred_pointmap_space == 'canonical' else 1.0)
        size = tuple(gt.shape[-2:])
        gt_depth = read_pixels(sample, 'gt_depth', required=False)
        if gt_depth is None:
            gt_depth = gt[2].double() / canonical_scale
        else:
            if tuple(gt_depth.shape) != (1, ) + size:
                raise ValueError(f'{name}: gt_depth is {tuple(gt_depth.shape)}'
                                 f', expected (1, {size[0]}, {size[1]}).')
            gt_depth = gt_depth[0].to(gt.device, torch.float64)
        keep = valid & torch.isfinite(gt_depth) & (gt_depth > 0)
        if not bool(keep.any()):
            return None
        # gather the (N, 3) pixels first, then float64 (cheaper than maps)
        p_gt = gt.permute(1, 2, 0)[keep].double() / canonical_scale
        p_hat = pred.permute(1, 2, 0)[keep].double() / scale_hat
        d_gt = gt_depth[keep]
        pred_depth = read_pixels(sample, 'pred_depth', required=False)
        if pred_depth is None:
            d_hat = p_hat[:, 2]
        else:
            pred_depth = match_size(
                as_compute_dtype(pred_depth), size, sample, self.pred_resize,
                'pred_depth', smooth=self.pred_resize_order == 'official')
            d_hat = pred_depth[0].to(gt.device)[keep].double()
        gt_norm = p_gt.norm(dim=1)
        out: Dict[str, float] = {}
        for mode in self.alignments:
            for key, value in point_errors(align(p_hat, p_gt, mode), p_gt,
                                           gt_norm).items():
                out[f'pointmap_{mode}/{key}'] = value
            aligned = align(d_hat, d_gt, mode).clamp_min(self.min_pred_depth)
            for key, value in depth_errors(aligned, d_gt).items():
                out[f'depth_{mode}/{key}'] = value
        return out

    def _camera_errors(self, sample: Any, size) -> Dict[str, Optional[float]]:
        """Scale and horizontal field-of-view errors (None when unknown)."""
        out: Dict[str, Optional[float]] = dict(scale_rel_err=None,
                                               fov_x_err_deg=None)
        scale_hat = _scalar(read_meta(sample, 'pred_scale'))
        scale = _scalar(read_meta(sample, 'canonical_scale'))
        if scale_hat is not None and scale is not None and scale > 0:
            out['scale_rel_err'] = abs(scale_hat - scale) / scale
        focal_hat = _scalar(read_meta(sample, 'pred_focal_length'))
        fx = _original_fx(sample)
        if focal_hat is not None and fx is not None and focal_hat > 0:
            ori_shape = read_meta(sample, 'ori_shape')
            width = float(ori_shape[1] if ori_shape is not None else size[1])
            out['fov_x_err_deg'] = abs(
                field_of_view_deg(focal_hat, width) -
                field_of_view_deg(fx, width))
        return out

    # -- dataset ---------------------------------------------------------------
    def _reduce(self, records: List[Dict[str, Any]]) -> Dict[str, float]:
        num = sum(r['num'] for r in records)
        total = {k: sum(r[k] for r in records) for k in _OFFICIAL_SUMS}
        metrics: Dict[str, float] = dict(
            l2_mean=total['l2'] / num,
            x_mae=total['x_abs'] / num,
            y_mae=total['y_abs'] / num,
            z_mae=total['z_abs'] / num,
            rmse=math.sqrt(total['sq_dist'] / num),
            normal_mae=total['angle'] / num,
            normal_rmse=math.sqrt(total['sq_angle'] / num))
        for j, t in enumerate(self.distance_thresholds):
            metrics[distance_key(t)] = sum(r['dist_within'][j]
                                           for r in records) / num
        for j, t in enumerate(self.angle_thresholds):
            metrics[threshold_key(t)] = sum(r['angle_within'][j]
                                            for r in records) / num
        self._log_left_out(records)
        if self.alignments:
            extras = [r['extras'] for r in records if r['extras'] is not None]
            for key in (extras[0] if extras else {}):
                metrics[key] = float(np.mean([e[key] for e in extras]))
        for key in ('scale_rel_err', 'fov_x_err_deg'):
            values = [r[key] for r in records if r[key] is not None]
            if values:
                metrics[f'extra/{key}'] = float(np.mean(values))
        return metrics

    def _log_left_out(self, records: List[Dict[str, Any]]) -> None:
        invalid = sum(r['invalid_gt'] for r in records)
        if invalid:
            print_log(f'PointmapMetric: left out {invalid} mask pixel(s) with '
                      'a non-finite GT point.', logger='current', level=30)
        if self.alignments:
            no_depth = sum(r['extras'] is None for r in records)
            if no_depth:
                print_log(f'PointmapMetric: {no_depth} sample(s) without a '
                          'GT depth > 0 in the mask are left out of the '
                          'aligned extras.', logger='current', level=30)
        for key, needs in (('scale_rel_err', 'pred_scale and canonical_scale'),
                           ('fov_x_err_deg', 'pred_focal_length and '
                            'ori_cam_K')):
            missing = sum(r[key] is None for r in records)
            if 0 < missing < len(records):
                print_log(f'PointmapMetric: {missing} of {len(records)} '
                          f'sample(s) lack {needs}: extra/{key} averages the '
                          'others.', logger='current', level=30)
