"""Where top-down pose gets its person boxes: a file, a detector or the
whole image.

Every source maps a :class:`~sapiens2_mm.apis.inputs.Frame` to ``(N, 5)``
float32 rows ``x1, y1, x2, y2, score`` in image pixels.

Bbox file schema (JSON), keyed by frame name (the image's path relative to
the input folder, e.g. ``a.jpg`` or ``cam1/0001.jpg``, or
``{video_stem}_{index:06d}.jpg`` for video frames; see
:mod:`sapiens2_mm.apis.inputs`)::

    {"000000000785.jpg": [[x1, y1, x2, y2], [x1, y1, x2, y2, score], ...],
     "empty.jpg": []}

The keypoint JSON written by ``tools/infer.py`` (``frames[].instances[].bbox``)
is accepted as well, so its boxes can be reused, and so is a COCO annotation
file (``images`` + ``annotations``): the ``[x, y, w, h]`` boxes of its
non-crowd person annotations, keyed by ``file_name`` and clipped to the image
as mmpose's COCO datasets clip them (:func:`coco_person_boxes`), which is how
mmpose evaluates with ground-truth boxes. A frame that is not listed gets the
whole-image box; an empty list means "nobody in this frame".

Boxes must be finite numbers (NaN / inf are refused when the file is read).
Given boxes with a score at or below ``bbox_thr`` are dropped (as detector
boxes are), and so are boxes entirely outside their image; both are counted.
"""
import json
import math
import os
from typing import Dict, Optional

import numpy as np
import torch

from ..utils.checkpoint import check_state_dict, read_checkpoint
from ..utils.user_errors import (
    CheckpointError,
    CheckpointNotFoundError,
    ConfigNotFoundError,
    InputError,
    InputNotFoundError,
)
from .inputs import Frame


def whole_image_box(frame: Frame) -> np.ndarray:
    """The (1, 5) box ``[0, 0, w - 1, h - 1]`` (the official demo's), score 1.

    Raises:
        ValueError: a 1x1 photo (its box is a point, no person fits).
    """
    h, w = frame.image.shape[:2]
    if max(h, w) < 2:
        raise ValueError(
            f'the photo is {h}x{w} pixel(s): its whole-image box '
            f'[0, 0, {w - 1}, {h - 1}] has no size, too small for a pose.')
    return np.array([[0, 0, w - 1, h - 1, 1]], dtype=np.float32)


def inside_image(boxes: np.ndarray, height: int, width: int) -> np.ndarray:
    """(N,) bool: the box overlaps the pixel area ``[0, w) x [0, h)``."""
    boxes = np.asarray(boxes, np.float32).reshape(-1, 5)
    return ((boxes[:, 2] >= 0) & (boxes[:, 3] >= 0) & (boxes[:, 0] < width)
            & (boxes[:, 1] < height))


class WholeImageBoxes:
    """One box per frame: the whole image (single-person crops)."""

    def __call__(self, frame: Frame) -> np.ndarray:
        return whole_image_box(frame)

    def report(self) -> list:
        """Nothing to report."""
        return []


def _parse_box(row, where: str) -> list:
    if (not isinstance(row, (list, tuple)) or len(row) not in (4, 5)
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in row)):
        raise InputError(
            f'{where}: a box must be [x1, y1, x2, y2] or [x1, y1, x2, y2, '
            f'score] numbers, got {row!r}.')
    if not all(math.isfinite(v) for v in row):
        raise InputError(
            f'{where}: box {row!r} has a non-finite value (NaN or inf); boxes '
            'are finite pixel corners.')
    x1, y1, x2, y2 = row[:4]
    if x2 <= x1 or y2 <= y1:
        raise InputError(
            f'{where}: box {row!r} has x2 <= x1 or y2 <= y1; boxes are '
            'x1, y1, x2, y2 (corners), not x, y, w, h.')
    return list(row[:4]) + [row[4] if len(row) == 5 else 1.0]


def coco_person_boxes(coco: dict, where: str = 'COCO file',
                      dropped: Optional[list] = None) -> Dict[str, list]:
    """``file_name -> [[x1, y1, x2, y2], ...]`` of a COCO annotation dict:
    every image listed (an image without people gets ``[]``), the boxes of
    its non-crowd annotations of the category named ``person`` (of every
    annotation when the file declares no categories).

    Each ``[x, y, w, h]`` box is clipped to the image as mmpose's
    ``BaseCocoStyleDataset.parse_data_info`` does: ``x1 = clip(x, 0, W - 1)``,
    ``x2 = clip(x + w, 0, W - 1)`` (y likewise), with the image entry's
    ``width`` / ``height`` (not clipped where the entry has none); a box left
    with no width or height is left out, as mmpose's ``_is_valid_instance``
    leaves it out, and its annotation id appended to ``dropped``.

    Args:
        coco: the parsed file.
        where: how messages name the file.
        dropped: receives the ids of the annotations left out.

    Raises:
        ValueError: an annotation without a ``[x, y, w, h]`` box of numbers,
            or of an image ``images`` does not list, naming the annotation.
    """
    person = {c['id'] for c in coco.get('categories', [])
              if c.get('name') == 'person'}
    images = {im['id']: im for im in coco.get('images', [])}
    boxes: Dict[str, list] = {im['file_name']: [] for im in images.values()}
    for ann in coco['annotations']:
        if ann.get('iscrowd') or (person and ann.get('category_id')
                                  not in person):
            continue
        image = images.get(ann.get('image_id'))
        what = f'{where}: COCO annotation {ann.get("id")!r}'
        if image is None:
            raise InputError(
                f'{what} refers to image_id {ann.get("image_id")!r}, which '
                '"images" does not list.')
        bbox = ann.get('bbox')
        if not (isinstance(bbox, (list, tuple)) and len(bbox) == 4 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for v in bbox)):
            has = f'has "bbox": {bbox!r}' if 'bbox' in ann else \
                'has no "bbox"'
            raise InputError(
                f'{what} (image {image["file_name"]!r}) {has}; a COCO '
                'person annotation needs "bbox": [x, y, w, h] in pixels. Fix '
                'or remove that annotation.')
        x, y, w, h = bbox
        x1, y1, x2, y2 = x, y, x + w, y + h
        if image.get('width') is not None and image.get('height') is not None:
            x1, x2 = np.clip([x1, x2], 0, image['width'] - 1).tolist()
            y1, y2 = np.clip([y1, y2], 0, image['height'] - 1).tolist()
        if not (x2 > x1 and y2 > y1):
            if dropped is not None:
                dropped.append(ann.get('id'))
            continue
        boxes[image['file_name']].append([x1, y1, x2, y2])
    return boxes


def prediction_boxes(data: dict, where: str) -> Dict[str, list]:
    """``image_name -> [bbox, ...]`` of a ``*_predictions.json`` written by
    ``tools/infer.py pose``.

    Raises:
        ValueError: a frame without ``image_name`` / ``instances``, or an
            instance without ``bbox``, naming it.
    """
    boxes: Dict[str, list] = {}
    for i, frame in enumerate(data['frames']):
        if not (isinstance(frame, dict) and isinstance(
                frame.get('image_name'), str) and isinstance(
                    frame.get('instances'), list) and all(
                        isinstance(ins, dict) and 'bbox' in ins
                        for ins in frame['instances'])):
            raise InputError(
                f'{where}: frames[{i}] is not a predictions frame with '
                '"image_name" and "instances" holding a "bbox" each.')
        boxes[frame['image_name']] = [ins['bbox']
                                      for ins in frame['instances']]
    return boxes


class BoxFile:
    """Person boxes read from a JSON file (schema in the module docstring).

    Args:
        path: the JSON file.
        bbox_thr: boxes with a score ``<= bbox_thr`` are dropped (boxes
            without a score have score 1); ``None`` keeps every box.

    Attributes:
        num_missing: frames not in the file (they got the whole image).
        num_listed: frames that are in the file.
        num_below_thr / num_outside: boxes dropped for their score / for
            lying entirely outside the image.
        dropped_empty: ids of COCO annotations left out (no area after
            clipping, :func:`coco_person_boxes`).

    Raises:
        FileNotFoundError / ValueError: missing file or a bad entry (named).
    """

    def __init__(self, path: str, bbox_thr: Optional[float] = None) -> None:
        if not os.path.isfile(path):
            raise InputNotFoundError(f'Bbox file not found: {path!r}.')
        try:
            with open(path) as f:
                data = json.load(f)
        except json.JSONDecodeError as err:
            raise InputError(
                f'Bbox file {path!r} is not valid JSON: {err}.') from err
        where = f'Bbox file {path!r}'
        dropped: list = []
        if isinstance(data, dict) and 'frames' in data:
            data = prediction_boxes(data, where)
        elif isinstance(data, dict) and 'annotations' in data:
            data = coco_person_boxes(data, where, dropped)
        if not isinstance(data, dict):
            raise InputError(
                f'Bbox file {path!r}: expected a JSON object mapping image '
                'names to box lists (see docs/inference.md).')
        self.boxes: Dict[str, np.ndarray] = {}
        for name, rows in data.items():
            if not isinstance(rows, list):
                raise InputError(
                    f'Bbox file {path!r}, entry {name!r}: expected a list of '
                    f'boxes, got {type(rows).__name__}.')
            parsed = [_parse_box(r, f'{path!r} [{name!r}]') for r in rows]
            self.boxes[name] = np.array(parsed, dtype=np.float32).reshape(-1, 5)
        self.path, self.bbox_thr = path, bbox_thr
        self.num_missing = self.num_below_thr = self.num_outside = 0
        self.num_listed = 0
        self.first_missing: Optional[str] = None
        self.dropped_empty = dropped

    def __call__(self, frame: Frame) -> np.ndarray:
        if frame.name not in self.boxes:
            self.num_missing += 1
            self.first_missing = self.first_missing or frame.name
            return whole_image_box(frame)
        self.num_listed += 1
        boxes = self.boxes[frame.name]
        if self.bbox_thr is not None:
            keep = boxes[:, 4] > self.bbox_thr
            self.num_below_thr += int((~keep).sum())
            boxes = boxes[keep]
        h, w = frame.image.shape[:2]
        keep = inside_image(boxes, h, w)
        self.num_outside += int((~keep).sum())
        return boxes[keep]

    def report(self) -> list:
        """Lines saying what was dropped or filled in."""
        lines = []
        if self.num_missing and not self.num_listed and self.boxes:
            lines.append(
                f'WARNING: no frame is named in the bbox file {self.path} '
                f'(its keys are e.g. {next(iter(self.boxes))!r}, the frames '
                f'e.g. {self.first_missing!r}): every frame used the '
                'whole-image box. Keys are frame names, the path relative '
                'to the input folder (docs/inference.md, "Bbox file").')
        elif self.num_missing:
            lines.append(f'{self.num_missing} frame(s) not in the bbox file '
                         'used the whole-image box')
        if self.dropped_empty:
            lines.append(
                f'{len(self.dropped_empty)} COCO annotation(s) with no area '
                'left after clipping the box to the image were left out (as '
                'mmpose does), ids: '
                + ', '.join(map(repr, self.dropped_empty[:5]))
                + (' ...' if len(self.dropped_empty) > 5 else ''))
        if self.num_below_thr:
            lines.append(f'{self.num_below_thr} box(es) with score <= '
                         f'--bbox-thr {self.bbox_thr} were dropped')
        if self.num_outside:
            lines.append(f'{self.num_outside} box(es) entirely outside their '
                         'image were dropped')
        return lines


def load_detector_weights(model: torch.nn.Module, state: dict,
                          checkpoint: str, config: str) -> None:
    """Load ``state`` into the detector, refusing any mismatch.

    Raises:
        ValueError: the checkpoint's keys or shapes do not fit ``config``'s
            detector (another detector, or not a detector at all); the
            message names both files and how many keys differ.
    """
    report = check_state_dict(model, state)
    if report:
        # 'missing in checkpoint (N)', 'unexpected ...', 'shape mismatch ...'
        counts = '; '.join(line.split(':', 1)[0].strip()
                           for line in report.strip().splitlines())
        raise CheckpointError(
            f'--det-checkpoint {checkpoint!r} does not fit the detector of '
            f'--det-config {config!r} ({counts}). Pass the weights that '
            'belong to that config.')
    model.load_state_dict(
        {k: v.to(model.state_dict()[k].device) for k, v in state.items()})


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
            raise ConfigNotFoundError(f'Detector config not found: {config!r}.')
        if checkpoint is not None and not os.path.isfile(checkpoint):
            raise CheckpointNotFoundError(
                f'Detector checkpoint not found: {checkpoint!r}.')
        from mmdet.apis import init_detector
        from mmdet.utils import register_all_modules as mmdet_register
        from mmengine.registry import DefaultScope
        state = None if checkpoint is None else read_checkpoint(checkpoint)
        mmdet_register(init_default_scope=False)
        # init_detector makes 'mmdet' the default scope; keep the caller's.
        with DefaultScope.overwrite_default_scope('mmdet'):
            # weights loaded below, checked: mmdet's load_checkpoint only
            # warns about mismatching keys and runs a random detector
            self.model = init_detector(config, None, device=device)
        if state is not None:
            load_detector_weights(self.model, state, checkpoint, config)
        self.bbox_thr, self.nms_thr = bbox_thr, nms_thr
        self.person_label = person_label
        self.num_fallback = 0

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
            self.num_fallback += 1
            return whole_image_box(frame)
        return torch.cat([boxes, scores[:, None]], 1).cpu().numpy()

    def report(self) -> list:
        """Lines saying how often the whole image stood in for detections."""
        if not self.num_fallback:
            return []
        return [f'{self.num_fallback} frame(s) without a detection above '
                f'--bbox-thr {self.bbox_thr} used the whole-image box']
