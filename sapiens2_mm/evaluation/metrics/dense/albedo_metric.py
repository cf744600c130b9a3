"""Albedo errors: the official AlbedoEvaluator and scale-invariant extras."""
import math
from typing import Any, Dict, List, Sequence, Union

import numpy as np
import torch

from sapiens2_mm.registry import METRICS

from .albedo_errors import (
    gradient_l1_sum,
    local_mse,
    masked_ssim_sum,
    scale_invariant_mse,
)
from .base_dense_metric import BaseDenseMetric, EmptyMaskError, nonfinite_pixels
from .sample_access import (
    as_compute_dtype,
    match_size,
    read_mask,
    read_pixels,
    sample_name,
)

_SUMS = ('sum_l1', 'sum_l2', 'num', 'sum_grad', 'num_grad', 'sum_ssim',
         'num_ssim')


def clamp_unit(pred: torch.Tensor) -> torch.Tensor:
    """Albedo clamped to [0, 1] (before a resize: the official demo)."""
    return pred.clamp(0.0, 1.0)


@METRICS.register_module()
class AlbedoMetric(BaseDenseMetric):
    """Albedo errors over the GT mask, in the color space of the data.

    Color space: the values as given, i.e. sRGB-encoded albedo in [0, 1]
    (the albedo PNGs divided by 255, as the datasets read them); no
    linearisation. The prediction is scored raw (unclamped), as officially;
    ``clamp_pred=True`` clamps it to [0, 1] first (what the demo outputs).

    Official metrics (``AlbedoEvaluator``, dataset-level): ``mae`` and
    ``rmse`` (per pixel, channel mean of |d| and d^2), ``psnr`` =
    10 log10(R^2 / MSE) with the dataset MSE, ``ssim`` (masked Gaussian SSIM,
    mean over counted windows), ``grad_l1`` (forward differences, pairs of
    valid pixels).

    Extras, per image then averaged: ``extra/si_mse`` (per-channel
    least-squares gain), ``extra/lmse`` (window 20, stride 10),
    ``extra/psnr_per_image``.

    Non-finite predicted values (NaN / inf) are scored as they are: they make
    the error means NaN or inf (never a good score; with ``clamp_pred`` inf
    becomes 0 or 1), and their pixels are counted in
    ``extra/nonfinite_pred_pixels`` (before clamping) with a warning.

    Data sample fields: ``pred_albedo`` (3, H, W), ``gt_albedo`` (3, H, W),
    ``gt_mask``.

    Args:
        psnr_data_range: R of PSNR and SSIM: a number (default 1.0, the
            range of the albedo fields) or ``'official'``: set once from the
            first batch this metric object sees (255 if max GT > 1.5 else 1)
            and never reset, as the official evaluator does.
        clamp_pred: clamp predictions to [0, 1] before scoring.
        lmse_window: LMSE window size.
        lmse_stride: LMSE window stride.
        **kwargs: :class:`BaseDenseMetric` options.
    """

    def __init__(self,
                 psnr_data_range: Union[float, str] = 1.0,
                 clamp_pred: bool = False,
                 lmse_window: int = 20,
                 lmse_stride: int = 10,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if psnr_data_range == 'official':
            self.data_range = None
        elif isinstance(psnr_data_range, (int, float)) and psnr_data_range > 0:
            self.data_range = float(psnr_data_range)
        else:
            raise ValueError("psnr_data_range must be a positive number or "
                             f"'official', got {psnr_data_range!r}.")
        self.psnr_data_range = psnr_data_range
        self.clamp_pred = clamp_pred
        self.lmse_window = int(lmse_window)
        self.lmse_stride = int(lmse_stride)

    def process(self, data_batch: Any, data_samples: Sequence[Any]) -> None:
        """Fix the official data range on the first batch, then score."""
        if self.data_range is None and data_samples:
            peak = max(float(read_pixels(s, 'gt_albedo').max())
                       for s in data_samples)
            self.data_range = 255.0 if peak > 1.5 else 1.0
        super().process(data_batch, data_samples)

    def _score_sample(self, sample: Any) -> Dict[str, Any]:
        name = sample_name(sample)
        gt = as_compute_dtype(read_pixels(sample, 'gt_albedo'))
        size = tuple(gt.shape[-2:])
        pred = as_compute_dtype(read_pixels(sample, 'pred_albedo')).to(gt)
        if gt.shape[0] != pred.shape[0]:
            raise ValueError(f'{name}: pred_albedo has {pred.shape[0]} '
                             f'channels, gt_albedo {gt.shape[0]}.')
        pred = match_size(
            pred, size, sample, self.pred_resize, 'pred_albedo',
            prepare=(clamp_unit if self.clamp_pred and
                     self.pred_resize_order == 'official' else None))
        mask = read_mask(sample, size).to(gt.device)
        nonfinite = nonfinite_pixels(pred, mask)
        if self.clamp_pred:
            pred = pred.clamp(0.0, 1.0)
        num = int(mask.sum())
        if num == 0:
            raise EmptyMaskError(name)
        diff = pred - gt
        sum_l1 = float(diff.abs().mean(dim=0)[mask].double().sum())
        sum_l2 = float((diff * diff).mean(dim=0)[mask].double().sum())
        sum_grad, num_grad = gradient_l1_sum(pred, gt, mask)
        sum_ssim, num_ssim = masked_ssim_sum(pred, gt, mask, self.data_range)
        mse = max(sum_l2 / num, 1e-12)
        return dict(
            sum_l1=sum_l1, sum_l2=sum_l2, num=num, sum_grad=sum_grad,
            num_grad=num_grad, sum_ssim=sum_ssim, num_ssim=num_ssim,
            nonfinite_pred=nonfinite,
            data_range=self.data_range,
            si_mse=scale_invariant_mse(pred, gt, mask),
            lmse=local_mse(pred, gt, mask, self.lmse_window,
                           self.lmse_stride),
            psnr=10.0 * math.log10(self.data_range**2 / mse))

    def _reduce(self, records: List[Dict[str, Any]]) -> Dict[str, float]:
        total = {k: sum(r[k] for r in records) for k in _SUMS}
        mse = max(total['sum_l2'] / total['num'], 1e-12)
        data_range = records[0]['data_range']
        return {
            'mae': total['sum_l1'] / total['num'],
            'rmse': math.sqrt(mse),
            'psnr': 10.0 * math.log10(data_range**2 / mse),
            'ssim': total['sum_ssim'] / max(total['num_ssim'], 1.0),
            'grad_l1': total['sum_grad'] / max(total['num_grad'], 1.0),
            'extra/si_mse': float(np.mean([r['si_mse'] for r in records])),
            'extra/lmse': float(np.mean([r['lmse'] for r in records])),
            'extra/psnr_per_image': float(
                np.mean([r['psnr'] for r in records])),
        }
