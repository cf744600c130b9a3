"""A task inferencer cut into the three stages of the overlapped pipeline.

* ``prepare(frame) -> (context, items)``: CPU work before the network
  (person boxes and top-down crops, resizing, packing); runs off the
  model's thread.
* ``forward(items) -> outputs``: the network on a batch of items (crops of
  several frames together); one output per item, on the model's thread.
* ``finish(frame, context, outputs) -> result``: CPU work after the network
  (heatmap decoding and the crop -> image mapping, un-padding, flip
  averaging, resizing to the frame and argmax); off the model's thread.

Each stage calls the same steps as the task inferencer's ``run_batch``, so
the results are those of the serial path (tests/test_apis/
test_pipelined_runner.py compares them). A task without its own stages
(:func:`stages_for`) runs its whole ``run_batch`` as ``forward``.
"""
import threading
from typing import Any, Tuple

import numpy as np
import torch
from mmengine.dataset import pseudo_collate

from .inputs import Frame
from .results import PoseResult, SegResult


class InferencerStages:
    """Any inferencer: one item per frame, ``run_batch`` as the forward."""

    def __init__(self, inferencer) -> None:
        self.inferencer = inferencer
        self.model = inferencer.model

    def prepare(self, frame: Frame) -> Tuple[Any, list]:
        """(context for :meth:`finish`, model items of ``frame``)."""
        return None, [frame]

    def forward(self, items: list) -> list:
        """One output per item."""
        return self.inferencer.run_batch(items)

    def finish(self, frame: Frame, context, outputs: list):
        """The frame's result from its items' outputs."""
        return outputs[0]


class PoseStages(InferencerStages):
    """Top-down pose: boxes and crops / backbone + head heatmaps / decoding.

    The forward is mmpose ``TopdownPoseEstimator.predict`` up to the heatmaps
    (flip test included, :meth:`PoseHeatmapHead.predict_heatmaps`); decoding
    (``head.decode``) and ``add_pred_to_datasample`` run in :meth:`finish`.

    ``prepare`` runs on several workers: the crops run in parallel, the
    box source one frame at a time (its counters, and a detector's switch of
    mmengine's default scope, are not thread-safe).
    """

    def __init__(self, inferencer) -> None:
        super().__init__(inferencer)
        self._boxes_lock = threading.Lock()

    def prepare(self, frame: Frame) -> Tuple[np.ndarray, list]:
        inf = self.inferencer
        with self._boxes_lock:
            boxes = inf.boxes(frame)
        boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 5)
        return boxes, [inf._crop(frame, box) for box in boxes]

    def forward(self, items: list) -> list:
        model = self.model
        data = model.data_preprocessor(pseudo_collate(items), False)
        inputs, samples = data['inputs'], data['data_samples']
        test_cfg = model.test_cfg or {}
        if test_cfg.get('flip_test', False):
            feats = [model.extract_feat(inputs),
                     model.extract_feat(inputs.flip(-1))]
        else:
            feats = model.extract_feat(inputs)
        heatmaps = model.head.predict_heatmaps(feats, samples, test_cfg)
        return list(zip(heatmaps.float().cpu(), samples))

    def finish(self, frame: Frame, boxes: np.ndarray,
               outputs: list) -> PoseResult:
        k = self.inferencer.num_keypoints
        n = len(boxes)
        kpts = np.zeros((n, k, 2), np.float32)
        scores = np.zeros((n, k), np.float32)
        if n:
            model = self.model
            heatmaps = torch.stack([hm for hm, _ in outputs])
            samples = [s for _, s in outputs]
            preds = model.head.decode(heatmaps)
            samples = model.add_pred_to_datasample(preds, None, samples)
            kpts = np.asarray(
                [s.pred_instances.keypoints.reshape(k, 2) for s in samples],
                np.float32).reshape(n, k, 2)
            scores = np.asarray(
                [s.pred_instances.keypoint_scores.reshape(k)
                 for s in samples], np.float32).reshape(n, k)
        return PoseResult(
            name=frame.name, image_size=tuple(frame.image.shape[:2]),
            bboxes=boxes[:, :4].copy(), bbox_scores=boxes[:, 4].copy(),
            keypoints=kpts, keypoint_scores=scores, video=frame.video,
            frame_index=frame.frame_index)


class SegStages(InferencerStages):
    """Seg: resize + pack (and the mirrored copy) / logits / un-pad, flip
    average, resize to the frame and argmax (as ``SegInferencer``)."""

    def prepare(self, frame: Frame) -> Tuple[None, list]:
        inf = self.inferencer
        items = [inf._prepare(frame, False)]
        if inf.flip_test:
            items.append(inf._prepare(frame, True))
        return None, items

    def forward(self, items: list) -> list:
        model = self.model
        data = model.data_preprocessor(pseudo_collate(items), False)
        metas = [s.metainfo for s in data['data_samples']]
        logits = model.inference(data['inputs'], metas)
        out = []
        for lg, meta in zip(logits, metas):
            left, right, top, bottom = meta.get(
                'img_padding_size', meta.get('padding_size', [0] * 4))
            out.append(lg[:, top:lg.shape[1] - bottom,
                          left:lg.shape[2] - right].float().cpu())
        return out

    def finish(self, frame: Frame, context, outputs: list) -> SegResult:
        from .label_resize import resize_argmax
        inf = self.inferencer
        logits = outputs[0]
        if inf.flip_test:
            from ..models.estimators import swap_channels
            flipped = outputs[1].flip(-1)
            logits = (logits + swap_channels(flipped, inf.swap_pairs,
                                             dim=0)) / 2
        head = getattr(self.model, 'decode_head', None)
        align = bool(getattr(self.model, 'align_corners', False))
        threshold = getattr(head, 'threshold', None) or 0.3
        return SegResult(
            name=frame.name,
            label_map=resize_argmax(logits, frame.image.shape[:2], align,
                                    threshold),
            video=frame.video, frame_index=frame.frame_index)


#: Task name -> its stages; other tasks use :class:`InferencerStages`.
TASK_STAGES = {'pose': PoseStages, 'seg': SegStages}


def stages_for(inferencer) -> InferencerStages:
    """The pipeline stages of ``inferencer``'s task."""
    cls = TASK_STAGES.get(getattr(inferencer, 'task', ''), InferencerStages)
    return cls(inferencer)

