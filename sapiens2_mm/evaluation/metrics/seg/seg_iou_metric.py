"""mIoU / mAcc / aAcc with the official Sapiens2 SegEvaluator conventions."""
from collections import OrderedDict
from typing import Dict, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from mmseg.evaluation.metrics import IoUMetric

from sapiens2_mm.registry import METRICS


@METRICS.register_module()
class SegIoUMetric(IoUMetric):
    """Dataset-level IoU metrics as the official ``SegEvaluator`` computes them.

    mmseg's :class:`IoUMetric` already sums
    intersect / union / pred / label histograms over the dataset and drops
    ignored pixels; this subclass adds what the official evaluator does on top:

    * predictions come from the *logits* resized bilinearly
      (``align_corners=False``) to the ground-truth size, then argmax; the
      ``pred_sem_seg`` of a data sample is used only when it has no
      ``seg_logits``;
    * ``nan_to_num=0.0`` by default, so classes absent from both prediction
      and label count as IoU 0 and background is included in the means;
    * per-class IoU is returned as ``IoU.<class name>`` next to the means.

    With ``nan_to_num=None`` the numbers follow mmseg's convention (absent
    classes excluded from the means) and equal ``mmseg.IoUMetric``.

    Args:
        ignore_index: label value left out (255).
        iou_metrics: any of 'mIoU', 'mDice', 'mFscore'.
        nan_to_num: value for NaN per-class scores; None keeps NaN (mmseg).
        per_class: add ``IoU.<name>`` entries (with 'mIoU' in iou_metrics).
        **kwargs: further :class:`IoUMetric` arguments.
    """

    def __init__(self,
                 ignore_index: int = 255,
                 iou_metrics: Sequence[str] = ('mIoU', ),
                 nan_to_num: Optional[float] = 0.0,
                 per_class: bool = True,
                 **kwargs) -> None:
        super().__init__(ignore_index=ignore_index,
                         iou_metrics=list(iou_metrics), nan_to_num=nan_to_num,
                         **kwargs)
        self.per_class = per_class

    def _prediction(self, data_sample: dict,
                    gt_shape: torch.Size) -> torch.Tensor:
        """(H, W) predicted labels at the ground-truth size."""
        logits = data_sample.get('seg_logits')
        if logits is not None:
            logits = logits['data']
            if logits.ndim != 3:
                raise ValueError(
                    f'seg_logits must be (K, H, W), got {tuple(logits.shape)}.')
            if tuple(logits.shape[-2:]) != tuple(gt_shape):
                logits = F.interpolate(logits[None].float(), size=gt_shape,
                                       mode='bilinear', align_corners=False)[0]
            return logits.argmax(dim=0)
        pred = data_sample['pred_sem_seg']['data'].squeeze(0)
        if tuple(pred.shape) != tuple(gt_shape):
            raise ValueError(
                f'pred_sem_seg of {data_sample.get("img_path", "a sample")} '
                f'is {tuple(pred.shape)} but its label is {tuple(gt_shape)}; '
                'give seg_logits (resized here) or predictions at label size.')
        return pred

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Accumulate per-class areas of one batch.

        Args:
            data_batch: unused.
            data_samples: dicts with ``gt_sem_seg.data`` (1, H, W) and either
                ``seg_logits.data`` (K, h, w) or ``pred_sem_seg.data`` (1, H, W).
        """
        num_classes = len(self.dataset_meta['classes'])
        for data_sample in data_samples:
            label = data_sample['gt_sem_seg']['data'].squeeze(0)
            pred = self._prediction(data_sample, label.shape)
            self.results.append(
                self.intersect_and_union(pred, label.to(pred), num_classes,
                                         self.ignore_index))

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """Summary metrics (mmseg's rounding: % to 2 decimals), per class too.

        Returns:
            ``aAcc``, ``mIoU``, ``mAcc`` (and ``mDice`` ... if asked), plus
            ``IoU.<class>`` when ``per_class``.
        """
        metrics = OrderedDict(super().compute_metrics(results))
        if not self.per_class:
            return metrics
        totals = [sum(area) for area in zip(*results)]
        per_class = self.total_area_to_metrics(*totals, self.metrics,
                                               self.nan_to_num, self.beta)
        # Per-class IoU (the per-class Acc is in the logged table only).
        for cls, value in zip(self.dataset_meta['classes'],
                              per_class.get('IoU', [])):
            metrics[f'IoU.{cls}'] = float(np.round(value * 100, 2))
        return metrics
