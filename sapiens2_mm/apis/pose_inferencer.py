"""Top-down 2-D pose inference on whole images (the official pose demo).

The person boxes come from a box source (:mod:`~sapiens2_mm.apis.
box_sources`: a file, a detector or the whole image).
"""
import threading
from typing import Callable, Optional, Tuple

import numpy as np
import torch
from mmengine.dataset import pseudo_collate

from .base_inferencer import BaseInferencer
from .box_sources import WholeImageBoxes
from .inputs import Frame
from .results import PoseResult


class PoseInferencer(BaseInferencer):
    """Keypoints of every person box, mapped back to image pixels.

    ``prepare``: the frame's person boxes, each through the config's test
    pipeline (bbox centre/scale with 1.25 padding, UDP affine crop);
    ``forward``: mmpose ``TopdownPoseEstimator.predict`` up to the heatmaps
    (flip test included, :meth:`PoseHeatmapHead.predict_heatmaps`) on a batch
    of crops (of several frames); a head without that fast path (mmpose's
    ``HeatmapHead`` of a stock config) runs its own ``predict`` (flip test
    and decoding, the heatmaps kept too); ``finish``: the codec's decode
    (unless the head decoded) and the crop -> image mapping
    (``add_pred_to_datasample``: ``kp / input_size * bbox_scale +
    bbox_center - bbox_scale / 2``), the people of the frame
    gathered into one :class:`PoseResult`.

    The box source runs one frame at a time (its counters, and a detector's
    switch of mmengine's default scope, are not thread-safe); the crops of
    several frames run in parallel on the runner's workers.

    Args:
        boxes: person box source, ``frame -> (N, 5)`` array (see
            :mod:`~sapiens2_mm.apis.box_sources`); default: the whole
            image.
        Others: see :class:`BaseInferencer`; ``batch_size`` counts person
            crops.
    """
    task = 'pose'

    def __init__(self, model, *args,
                 boxes: Optional[Callable[[Frame], np.ndarray]] = None,
                 **kwargs) -> None:
        super().__init__(model, *args, **kwargs)
        self.boxes = boxes if boxes is not None else WholeImageBoxes()
        self._boxes_lock = threading.Lock()
        if self.flip_test is not None:
            self.model.test_cfg = dict(self.model.test_cfg or {},
                                       flip_test=bool(self.flip_test))
        self.num_keypoints = int(self.model.dataset_meta['num_keypoints'])

    def crop(self, frame: Frame, box: np.ndarray) -> dict:
        """The packed top-down crop of one (5,) ``x1, y1, x2, y2, score``
        box."""
        return self.pack(frame, bbox=box[None, :4].astype(np.float32),
                         bbox_score=box[4:5].astype(np.float32),
                         **self.model.dataset_meta)

    def prepare(self, frame: Frame) -> Tuple[np.ndarray, list]:
        with self._boxes_lock:
            boxes = self.boxes(frame)
        boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 5)
        return boxes, [self.crop(frame, box) for box in boxes]

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
        if not hasattr(model.head, 'predict_heatmaps'):
            # an mmpose head: its own predict path, which flips (with the
            # config's flip_mode / shift_heatmap), merges and decodes
            preds, fields = model.head.predict(
                feats, samples, test_cfg=dict(test_cfg, output_heatmaps=True))
            return [(field.heatmaps.float().cpu(), sample, pred)
                    for field, sample, pred in zip(fields, samples, preds)]
        heatmaps = model.head.predict_heatmaps(feats, samples, test_cfg)
        return list(zip(heatmaps.float().cpu(), samples))

    def finish(self, frame: Frame, boxes: np.ndarray,
               outputs: list) -> PoseResult:
        k, n = self.num_keypoints, len(boxes)
        kpts = np.zeros((n, k, 2), np.float32)
        scores = np.zeros((n, k), np.float32)
        if n:
            model = self.model
            if len(outputs[0]) == 3:  # decoded by the head's own predict
                preds = [out[2] for out in outputs]
            else:
                preds = model.head.decode(
                    torch.stack([out[0] for out in outputs]))
            samples = model.add_pred_to_datasample(
                preds, None, [out[1] for out in outputs])
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
