"""Shared bookkeeping of the dense metrics: per-sample results, skips, duplicates.

Every dense metric stores one small record per data sample in
``self.results`` (float64 sums and counts, a few per-image values). mmengine's
``BaseMetric`` gathers those records from all ranks in dataset order and drops
the padding of the last batch, so sums over the records on rank 0 equal a
single-process run exactly.

Non-finite predictions (NaN / inf from a diverged model or a bf16 overflow)
are never scored as good: each metric says how it scores them, and every
record counts them (``nonfinite_pred``: valid pixels whose prediction is not
finite), reported as ``extra/nonfinite_pred_pixels`` with a warning.
"""
from abc import abstractmethod
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmengine.evaluator import BaseMetric
from mmengine.logging import print_log

from .sample_access import (
    PRED_RESIZE_MODES,
    PRED_RESIZE_ORDERS,
    check_choice,
    read_meta,
)

NONFINITE_KEY = 'extra/nonfinite_pred_pixels'


class EmptyMaskError(ValueError):
    """A sample without a valid pixel (raised by ``_score_sample``)."""


def nonfinite_pixels(pred: torch.Tensor, valid: torch.Tensor) -> int:
    """Pixels of ``valid`` (H, W) where any channel of ``pred`` (C, H, W) is
    NaN or infinite."""
    return int((~torch.isfinite(pred).all(dim=0) & valid).sum())


class BaseDenseMetric(BaseMetric):
    """Base of :class:`NormalMetric`, :class:`PointmapMetric`, :class:`AlbedoMetric`.

    Args:
        pred_resize: predictions of another size than the GT: ``'error'``
            (default; the estimator returns original-size predictions),
            ``'crop_padding'`` (crop ``padding_size``, then resize) or
            ``'official'`` (resize the whole prediction, padding included,
            as the official evaluators do).
        pred_resize_order: with ``'crop_padding'``, where the task's own
            steps go (:data:`PRED_RESIZE_ORDERS`): ``'official'`` (default;
            the official demos' order, so the scored maps equal the demos'
            saved maps: normals unit length and albedo clamped before the
            resize, pointmaps blurred before an enlargement) or
            ``'resize_first'`` (crop and resize the raw prediction only).
        duplicate_samples: a sample whose ``img_path`` was already seen:
            ``'skip'`` (default; counted once, and the repeats are reported) or
            ``'official'`` (counted again, as the official datasets do when
            they return sample 0 in place of a filtered one).
        empty_mask: a sample without a valid pixel: ``'skip'`` (default;
            left out, and the count and paths are logged) or ``'error'``.
        collect_device: ``'cpu'`` or ``'gpu'`` for the cross-rank gather.
        prefix: metric name prefix (none by default: the official names).
    """
    default_prefix: Optional[str] = None
    #: how the metric scores non-finite predictions (for the warning)
    nonfinite_rule: str = 'which make the error means NaN/inf'

    def __init__(self,
                 pred_resize: str = 'error',
                 pred_resize_order: str = 'official',
                 duplicate_samples: str = 'skip',
                 empty_mask: str = 'skip',
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        check_choice('pred_resize', pred_resize, PRED_RESIZE_MODES)
        check_choice('pred_resize_order', pred_resize_order,
                     PRED_RESIZE_ORDERS)
        self.pred_resize_order = pred_resize_order
        check_choice('duplicate_samples', duplicate_samples,
                     ('skip', 'official'))
        check_choice('empty_mask', empty_mask, ('skip', 'error'))
        self.pred_resize = pred_resize
        self.duplicate_samples = duplicate_samples
        self.empty_mask = empty_mask

    # -- subclass interface -------------------------------------------------
    @abstractmethod
    def _score_sample(self, sample: Any) -> Dict[str, Any]:
        """Sufficient statistics of one sample (floats / small arrays).

        Raises:
            EmptyMaskError: no valid pixel.
        """

    @abstractmethod
    def _reduce(self, records: List[Dict[str, Any]]) -> Dict[str, float]:
        """Dataset metrics from the kept records (at least one)."""

    # -- BaseMetric ----------------------------------------------------------
    def process(self, data_batch: Any, data_samples: Sequence[Any]) -> None:
        """Score each sample of a batch.

        Args:
            data_batch: unused.
            data_samples: dicts (``to_dict()`` of ``DenseDataSample``) or
                ``DenseDataSample`` objects with the predictions and GT.
        """
        for sample in data_samples:
            name = read_meta(sample, 'img_path')
            try:
                stats = self._score_sample(sample)
            except EmptyMaskError:
                if self.empty_mask == 'error':
                    raise
                self.results.append(dict(img_path=name, skipped='empty mask'))
                continue
            self.results.append(dict(img_path=name, skipped=None, **stats))

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """Drop skipped and duplicated samples (logged), then reduce."""
        kept, seen = [], set()
        repeats: Counter = Counter()
        empty = [r['img_path'] for r in results if r['skipped']]
        for record in results:
            if record['skipped']:
                continue
            path = record['img_path']
            if (path is not None and path in seen
                    and self.duplicate_samples == 'skip'):
                repeats[path] += 1
                continue
            seen.add(path)
            kept.append(record)
        name = type(self).__name__
        if empty:
            print_log(
                f'{name}: skipped {len(empty)} sample(s) without a valid '
                f'pixel: {empty[:10]}{" ..." if len(empty) > 10 else ""}',
                logger='current', level=30)
        if repeats:
            print_log(
                f'{name}: skipped {sum(repeats.values())} repeated sample(s) '
                f'(same img_path counted once): {dict(repeats)}',
                logger='current', level=30)
        if not kept:
            raise ValueError(
                f'{name}: no sample to evaluate ({len(results)} processed, '
                f'{len(empty)} without a valid pixel).')
        metrics = self._reduce(kept)
        nonfinite = sum(r.get('nonfinite_pred', 0) for r in kept)
        if nonfinite:
            bad = [r['img_path'] for r in kept if r.get('nonfinite_pred')]
            print_log(
                f'{name}: {nonfinite} valid pixel(s) of {len(bad)} sample(s) '
                f'have a non-finite prediction (NaN/inf), {self.nonfinite_rule}'
                f': {bad[:10]}{" ..." if len(bad) > 10 else ""}',
                logger='current', level=30)
            metrics[NONFINITE_KEY] = nonfinite
        return metrics

