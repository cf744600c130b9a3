"""Read COCO-format keypoint ground truth into per-image arrays."""
from collections import defaultdict
from typing import Dict, Iterable, Sequence, Union

import numpy as np

from .coco_keypoint_eval import ImageGT

FieldSpec = Union[str, Sequence[str]]


def field_names(keypoint_field: FieldSpec) -> tuple:
    """The annotation field(s) that hold the keypoints, as a tuple."""
    if isinstance(keypoint_field, str):
        return (keypoint_field, )
    return tuple(keypoint_field)


def annotation_keypoints(ann: dict, keypoint_field: FieldSpec,
                         num_keypoints: int, source: str) -> np.ndarray:
    """Keypoints of one annotation as a (K, 3) float64 array.

    Args:
        ann: COCO annotation dict.
        keypoint_field: field name, or several names whose lists are
            concatenated in order (COCO-WholeBody stores its 133 keypoints as
            ``keypoints``, ``foot_kpts``, ``face_kpts``, ``lefthand_kpts``,
            ``righthand_kpts``).
        num_keypoints: expected K.
        source: where the annotation comes from, for error messages.

    Raises:
        KeyError: a field is missing.
        ValueError: the values do not make K (x, y, v) triplets.
    """
    values = []
    for name in field_names(keypoint_field):
        if name not in ann:
            have = sorted(k for k in ann if 'kp' in k or 'keypoint' in k)
            raise KeyError(
                f'Annotation id={ann.get("id")} in {source} has no {name!r} '
                f'field (keypoint fields present: {have}). Set '
                '`gt_keypoint_field` to the field that holds the '
                f'{num_keypoints} keypoints; for COCO-WholeBody data use '
                'tools/dataset_converters/coco_wholebody_to_sapiens308.py to '
                "write 'goliath_wholebody_kpts'.")
        values.extend(ann[name])
    if len(values) != num_keypoints * 3:
        raise ValueError(
            f'Annotation id={ann.get("id")} in {source}: field(s) '
            f'{field_names(keypoint_field)} hold {len(values)} values, expected '
            f'{num_keypoints * 3} ({num_keypoints} keypoints as x, y, v). Check '
            'that the sigmas / metainfo match the annotation layout.')
    return np.asarray(values, dtype=np.float64).reshape(num_keypoints, 3)


def build_gt(images: Iterable, annotations: Iterable[dict],
             category_ids: Iterable[int], keypoint_field: FieldSpec,
             num_keypoints: int, use_area: bool, source: str
             ) -> Dict[tuple, ImageGT]:
    """Group COCO annotations into ``{(category_id, image_id): ImageGT}``.

    Every (category, image) pair gets an entry, empty when the image has no
    annotation of that category, because COCOeval evaluates every GT image
    (detections on an image without people are false positives).

    Args:
        images: image ids of the GT set.
        annotations: COCO annotation dicts (need ``image_id``,
            ``category_id``, ``bbox``, the keypoint field(s), ``iscrowd``
            (default 0) and ``area`` when ``use_area``).
        category_ids: category ids of the GT set.
        keypoint_field: see :func:`annotation_keypoints`.
        num_keypoints: K.
        use_area: normalize OKS by the annotation ``area``; otherwise by
            0.53 x the box area (xtcocotools' rule for sets without area).
        source: where the annotations come from, for error messages.
    """
    grouped = defaultdict(list)
    for ann in annotations:
        grouped[(ann['category_id'], ann['image_id'])].append(ann)
    image_ids = list(dict.fromkeys(images))
    gts = {}
    for cat in dict.fromkeys(category_ids):
        for img in image_ids:
            anns = grouped.get((cat, img), [])
            kpts = np.zeros((len(anns), num_keypoints, 3))
            bboxes = np.zeros((len(anns), 4))
            areas = np.zeros(len(anns))
            crowd = np.zeros(len(anns), dtype=bool)
            num_kpts = np.array([ann.get('num_keypoints', -1) for ann in anns],
                                dtype=np.float64)
            for j, ann in enumerate(anns):
                kpts[j] = annotation_keypoints(ann, keypoint_field,
                                               num_keypoints, source)
                bboxes[j] = ann['bbox']
                crowd[j] = bool(ann.get('iscrowd', 0))
                if use_area:
                    if 'area' not in ann:
                        raise KeyError(
                            f'Annotation id={ann.get("id")} in {source} has no '
                            "'area'; set use_area=False to normalize OKS by "
                            '0.53 x box area instead.')
                    areas[j] = ann['area']
                else:
                    areas[j] = bboxes[j, 2] * bboxes[j, 3] * 0.53
            gts[(cat, img)] = ImageGT(kpts, areas, bboxes, crowd, num_kpts)
    return gts
