"""Where top-down pose gets its person boxes: a file, a detector or the image.

Every source maps a :class:`~sapiens2_mm.apis.inputs.Frame` to ``(N, 5)``
float32 rows ``x1, y1, x2, y2, score`` in image pixels.

Bbox file schema (JSON), keyed by frame name (an image's base name, or
``{video_stem}_{index:06d}.jpg`` for video frames)::

    {"000000000785.jpg": [[x1, y1, x2, y2], [x1, y1, x2, y2, score], ...],
     "empty.jpg": []}

The keypoint JSON written by ``tools/infer.py`` (``frames[].instances[].bbox``)
is accepted as well, so its boxes can be reused. A frame that is not listed
gets the whole-image box; an empty list means "nobody in this frame".
"""
import json
import os
from typing import Dict, Optional

import numpy as np
import torch

from .inputs import Frame


def whole_image_box(frame: Frame) -> np.ndarray:
    """The (1, 5) box covering the whole frame, score 1."""
    h, w = frame.image.shape[:2]
    return np.array([[0, 0, w, h, 1]], dtype=np.float32)


class WholeImageBoxes:
    """One box per frame: the whole image (single-person crops)."""

    def __call__(self, frame: Frame) -> np.ndarray:
        return whole_image_box(frame)


def _parse_box(row, where: str) -> list:
    if (not isinstance(row, (list, tuple)) or len(row) not in (4, 5)
            or not all(isinstance(v, (int, float)) for v in row)):
        raise ValueError(
            f'{where}: a box must be [x1, y1, x2, y2] or [x1, y1, x2, y2, '
            f'score] numbers, got {row!r}.')
    x1, y1, x2, y2 = row[:4]
    if x2 <= x1 or y2 <= y1:
        raise ValueError(
            f'{where}: box {row!r} has x2 <= x1 or y2 <= y1; boxes are '
            'x1, y1, x2, y2 (corners), not x, y, w, h.')
    return list(row[:4]) + [row[4] if len(row) == 5 else 1.0]


class BoxFile:
    """Person boxes read from a JSON file (schema in the module docstring).

    Args:
        path: the JSON file.

    Raises:
        FileNotFoundError / ValueError: missing file or a bad entry (named).
    """

    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise FileNotFoundError(f'Bbox file not found: {path!r}.')
        try:
            with open(path) as f:
                data = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(
                f'Bbox file {path!r} is not valid JSON: {err}.') from err
        if isinstance(data, dict) and 'frames' in data:
            data = {
                fr['image_name']: [ins['bbox'] for ins in fr['instances']]
                for fr in data['frames']
            }
        if not isinstance(data, dict):
            raise ValueError(
                f'Bbox file {path!r}: expected a JSON object mapping image '
                'names to box lists (see docs/inference.md).')
        self.boxes: Dict[str, np.ndarray] = {}
        for name, rows in data.items():
            if not isinstance(rows, list):
                raise ValueError(
                    f'Bbox file {path!r}, entry {name!r}: expected a list of '
                    f'boxes, got {type(rows).__name__}.')
            parsed = [_parse_box(r, f'{path!r} [{name!r}]') for r in rows]
            self.boxes[name] = np.array(parsed, dtype=np.float32).reshape(-1, 5)
        self.num_missing = 0

    def __call__(self, frame: Frame) -> np.ndarray:
        if frame.name not in self.boxes:
            self.num_missing += 1
            return whole_image_box(frame)
        return self.boxes[frame.name]


class DetectorBoxes:
    """Person boxes from an mmdet detector, as in the official demo.

    Keeps class ``person_label`` with score > ``bbox_thr``, applies IoU-NMS
    (``nms_thr``, torchvision) and falls back to the whole image when nothing
    is left, as the official demo does.

    Args:
        config: mmdet config file.
        checkpoint: its weights; ``None`` keeps random weights (tests).
        device: torch device.
        bbox_thr / nms_thr: score and IoU thresholds (official 0.3 / 0.3).
        person_label: the person class index of the detector (0 for COCO and
            the single-class Sapiens detector).
    """

    def __init__(self, config: str, checkpoint: Optional[str] = None,
                 device: str = 'cpu', bbox_thr: float = 0.3,
                 nms_thr: float = 0.3, person_label: int = 0) -> None:
        if not os.path.isfile(config):
            raise FileNotFoundError(f'Detector config not found: {config!r}.')
        if checkpoint is not None and not os.path.isfile(checkpoint):
            raise FileNotFoundError(
                f'Detector checkpoint not found: {checkpoint!r}.')
        from mmdet.apis import init_detector
        from mmdet.utils import register_all_modules as mmdet_register
        from mmengine.registry import DefaultScope
        mmdet_register(init_default_scope=False)
        # init_detector makes 'mmdet' the default scope; keep the caller's.
        with DefaultScope.overwrite_default_scope('mmdet'):
            self.model = init_detector(config, checkpoint, device=device)
        self.bbox_thr, self.nms_thr = bbox_thr, nms_thr
        self.person_label = person_label

    def __call__(self, frame: Frame) -> np.ndarray:
        from mmdet.apis import inference_detector
        from mmengine.registry import DefaultScope
        # inference_detector switches the default scope to mmdet; restore ours.
        with DefaultScope.overwrite_default_scope('mmdet'):
            pred = inference_detector(self.model, frame.image).pred_instances
        keep = (pred.labels == self.person_label) & (
            pred.scores > self.bbox_thr)
        boxes, scores = pred.bboxes[keep].float(), pred.scores[keep].float()
        if len(boxes):
            from torchvision.ops import nms
            order = nms(boxes, scores, self.nms_thr)
            boxes, scores = boxes[order], scores[order]
        if not len(boxes):
            return whole_image_box(frame)
        return torch.cat([boxes, scores[:, None]], 1).cpu().numpy()
