"""mIoU / mAcc / aAcc with the official Sapiens2 SegEvaluator conventions."""
import glob
import os.path as osp
from collections import OrderedDict
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
import torch
from mmengine.dist import is_main_process
from mmengine.logging import MMLogger, print_log
from mmseg.evaluation.metrics import IoUMetric
from PIL import Image

from sapiens2_mm.codecs.label_resize import nonfinite_pixels, resize_argmax
from sapiens2_mm.registry import METRICS


@METRICS.register_module()
class SegIoUMetric(IoUMetric):
    """Dataset-level IoU metrics as the official ``SegEvaluator`` computes them.

    mmseg's :class:`IoUMetric` already sums
    intersect / union / pred / label histograms over the dataset and drops
    ignored pixels; this subclass adds what the official evaluator does on top:

    * predictions come from the *logits* resized bilinearly
      (``align_corners=False``) to the ground-truth size, then argmax (the
      inferencer's :func:`~sapiens2_mm.codecs.label_resize.resize_argmax`:
      PyTorch's interpolation + argmax in bands of rows); the
      ``pred_sem_seg`` of a data sample is used when it has no
      ``seg_logits``, and for one-channel (binary, sigmoid) models, whose
      ``seg_logits`` are probabilities that only the model's threshold turns
      into labels (mmseg's segmentors write that decision in
      ``pred_sem_seg``, which is what mmseg's metric reads);
    * ``nan_to_num=0.0`` by default, so classes absent from both prediction
      and label count as IoU 0 and background is included in the means;
    * per-class IoU is returned as ``IoU.<class name>`` next to the means;
    * a pixel whose (resized) logits are not all finite (NaN / inf) is scored
      as wrong: it counts for its label's class and matches no prediction
      (argmax would pick a class for it, mmseg's metric scores whatever that
      is). Their number is reported as ``nonfinite_pred_pixels`` with a
      warning.

    With ``nan_to_num=None`` the numbers follow mmseg's convention (absent
    classes excluded from the means) and equal ``mmseg.IoUMetric``.

    ``output_dir`` and ``format_only`` behave as mmseg's: each evaluated label
    map is written as ``{output_dir}/{image stem}.png`` (uint8, +1 with
    ``reduce_zero_label``), and ``format_only=True`` writes them for data
    without ground truth and returns no metrics. Unlike mmseg, earlier outputs
    are never overwritten: an ``output_dir`` that already holds PNGs, two
    images with the same stem, or a PNG path equal to the input image is an
    error.

    Args:
        ignore_index: label value left out (255).
        iou_metrics: any of 'mIoU', 'mDice', 'mFscore'.
        nan_to_num: value for NaN per-class scores; None keeps NaN (mmseg).
        per_class: add ``IoU.<name>`` entries (with 'mIoU' in iou_metrics).
        output_dir: where to write the predicted label maps (None: nowhere).
        format_only: only write the label maps (needs ``output_dir``); the
            data samples need no ``gt_sem_seg``.
        **kwargs: further :class:`IoUMetric` arguments.
    """

    def __init__(self,
                 ignore_index: int = 255,
                 iou_metrics: Sequence[str] = ('mIoU', ),
                 nan_to_num: Optional[float] = 0.0,
                 per_class: bool = True,
                 output_dir: Optional[str] = None,
                 format_only: bool = False,
                 **kwargs) -> None:
        if format_only and not output_dir:
            raise ValueError(
                'SegIoUMetric: format_only=True only writes the predicted '
                'label maps, so it needs output_dir (e.g. '
                '"work_dirs/seg_test/pred").')
        if output_dir and is_main_process():
            earlier = glob.glob(osp.join(glob.escape(output_dir), '*.png'))
            if earlier:
                raise FileExistsError(
                    f'SegIoUMetric: output_dir {output_dir!r} already holds '
                    f'{len(earlier)} PNG file(s) (e.g. {earlier[0]!r}) from an '
                    'earlier run; they would be overwritten. Choose a new or '
                    'empty output_dir.')
        super().__init__(ignore_index=ignore_index,
                         iou_metrics=list(iou_metrics), nan_to_num=nan_to_num,
                         output_dir=output_dir, format_only=format_only,
                         **kwargs)
        self.per_class = per_class
        self._written: Dict[str, str] = {}  # PNG path -> image it came from

    def _prediction(self, data_sample: dict, out_shape: Optional[tuple]
                    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(H, W) predicted labels, at ``out_shape`` when given, and the
        (H, W) bool map of pixels with non-finite logits (None without
        logits); those pixels get the label K (no class).

        Args:
            data_sample: with ``seg_logits.data`` (K, h, w) and/or
                ``pred_sem_seg.data`` (1, H, W).
            out_shape: (H, W) of the label map; None without ground truth
                (the sample's ``ori_shape``, if any, is used for logits).
        """
        name = data_sample.get('img_path', 'a sample')
        logits = data_sample.get('seg_logits')
        pred = data_sample.get('pred_sem_seg')
        if logits is not None:
            logits = logits['data']
            if logits.ndim != 3:
                raise ValueError(
                    f'seg_logits of {name} must be (K, H, W), got '
                    f'{tuple(logits.shape)}.')
        if logits is not None and logits.shape[0] > 1:
            size = tuple(out_shape or data_sample.get('ori_shape')
                         or logits.shape[-2:])
            # the inferencer's resize + argmax (in bands of rows)
            labels = torch.from_numpy(resize_argmax(logits, size).astype(
                np.int64)).to(logits.device)
            bad = nonfinite_pixels(logits, size)
            if bool(bad.any()):
                # a class index no histogram bin holds: never a match
                labels = labels.masked_fill(bad, logits.shape[0])
            return labels, bad
        if pred is None:
            raise ValueError(
                f'{name} has one-channel (binary) seg_logits and no '
                'pred_sem_seg: the labels of a sigmoid model depend on its '
                'decode_head.threshold, which mmseg segmentors apply when they '
                'write pred_sem_seg; give pred_sem_seg.')
        pred = pred['data'].squeeze(0)
        if out_shape is not None and tuple(pred.shape) != tuple(out_shape):
            raise ValueError(
                f'pred_sem_seg of {name} is {tuple(pred.shape)} but its label '
                f'is {tuple(out_shape)}; give seg_logits (resized here) or '
                'predictions at label size.')
        return pred, None

    def _write_png(self, data_sample: dict, pred: torch.Tensor) -> None:
        """Write ``pred`` as ``{output_dir}/{image stem}.png`` (mmseg's
        naming), refusing to overwrite the input or another image's map."""
        img_path = data_sample.get('img_path')
        if img_path is None:
            raise ValueError(
                'SegIoUMetric: output_dir is set but a data sample has no '
                'img_path to name its PNG after.')
        stem = osp.splitext(osp.basename(img_path))[0]
        path = osp.abspath(osp.join(self.output_dir, f'{stem}.png'))
        if path == osp.abspath(img_path):
            raise ValueError(
                f'SegIoUMetric: the prediction of {img_path} would overwrite '
                'the image itself; choose an output_dir outside the image '
                'folder.')
        source = self._written.setdefault(path, img_path)
        if source != img_path:
            raise ValueError(
                f'SegIoUMetric: {img_path} and {source} both map to {path}; '
                'images with the same file stem cannot share an output_dir.')
        mask = pred.cpu().numpy()
        if data_sample.get('reduce_zero_label', False):
            mask = mask + 1
        Image.fromarray(mask.astype(np.uint8)).save(path)

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Accumulate per-class areas of one batch (and write label maps).

        Args:
            data_batch: unused.
            data_samples: dicts with ``gt_sem_seg.data`` (1, H, W) (optional
                with ``format_only``) and ``seg_logits.data`` (K, h, w) and/or
                ``pred_sem_seg.data`` (1, H, W).
        """
        num_classes = len(self.dataset_meta['classes'])
        for data_sample in data_samples:
            gt = data_sample.get('gt_sem_seg')
            if gt is None and not self.format_only:
                raise ValueError(
                    f'{data_sample.get("img_path", "A data sample")} has no '
                    'gt_sem_seg to evaluate against; to only write the '
                    'predictions set format_only=True and output_dir.')
            label = None if gt is None else gt['data'].squeeze(0)
            pred, bad = self._prediction(
                data_sample, None if label is None else tuple(label.shape))
            if not self.format_only:
                areas = self.intersect_and_union(pred, label.to(pred),
                                                 num_classes,
                                                 self.ignore_index)
                nonfinite = 0 if bad is None else int(
                    (bad & (label.to(pred) != self.ignore_index)).sum())
                self.results.append((*areas, nonfinite))
            if self.output_dir is not None:
                self._write_png(data_sample, pred)

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """Summary metrics (mmseg's rounding: % to 2 decimals), per class too.

        Returns:
            ``aAcc``, ``mIoU``, ``mAcc`` (and ``mDice`` ... if asked), plus
            ``IoU.<class>`` when ``per_class``; empty with ``format_only``.
        """
        if self.format_only:
            MMLogger.get_current_instance().info(
                f'SegIoUMetric: label maps written to {self.output_dir}')
            return OrderedDict()
        nonfinite = sum(r[4] for r in results)
        results = [r[:4] for r in results]
        metrics = OrderedDict(super().compute_metrics(results))
        if nonfinite:
            print_log(
                f'SegIoUMetric: {nonfinite} labelled pixel(s) have non-finite '
                'seg_logits (NaN/inf); they are scored as wrong.',
                logger='current', level=30)
            metrics['nonfinite_pred_pixels'] = nonfinite
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
