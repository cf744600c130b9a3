"""Sapiens2 308-keypoint whole-body AP with per-part AP (docs/pose_evaluation.md)."""
import json
from importlib import resources
from typing import Optional, Sequence

import numpy as np

from sapiens2_mm.registry import METRICS

from .keypoint_oks_metric import KeypointOKSMetric

PARTS_308 = ('body', 'foot', 'face', 'left_hand', 'right_hand')
PART_SIZES_308 = dict(body=17, foot=6, face=238, left_hand=20, right_hand=20)


def load_keypoints308_info() -> dict:
    """The 308-keypoint table shipped in ``sapiens2_mm/metainfo``.

    Returns:
        dict: ``names`` (308), ``sigmas`` (308,) float64 and ``groups``
        (group name -> keypoint ids, e.g. ``body`` in COCO order).
    """
    path = resources.files('sapiens2_mm').joinpath('metainfo',
                                                   'keypoints308.json')
    data = json.loads(path.read_text())
    names = [k['name'] for k in data['keypoints']]
    name2id = {n: i for i, n in enumerate(names)}
    groups = {g: [name2id[n] for n in members]
              for g, members in data['groups'].items()}
    return dict(names=names, sigmas=np.asarray(data['sigmas'], np.float64),
                groups=groups)


@METRICS.register_module()
class Keypoints308Metric(KeypointOKSMetric):
    """COCO OKS AP/AR over the 308 Sapiens2 keypoints and per body part.

    The official Sapiens2 ``Keypoints308Evaluator`` without the private
    xtcocotools fork: instance score = bbox score x mean of the keypoint scores
    above 0.2, OKS-NMS at 0.9 with all 308 sigmas, ``use_area=True``; the
    returned AP/AR are over all 308 keypoints (``goliath_wholebody_kpts``) and,
    from the same pass, ``body/AP`` (17, COCO order), ``foot/AP`` (6),
    ``face/AP`` (238), ``left_hand/AP`` (20) and ``right_hand/AP`` (20), each
    with its own sigmas.

    Args:
        ann_file: COCO-format json with ``goliath_wholebody_kpts`` (308 x 3
            per person), e.g. written by
            ``tools/dataset_converters/coco_wholebody_to_sapiens308.py``.
        gt_keypoint_field: annotation field of the 308 keypoints.
        parts: group names of ``keypoints308.json`` to report.
        **kwargs: the other :class:`KeypointOKSMetric` arguments (the
            official defaults apply).
    """
    default_prefix: Optional[str] = 'keypoints308'

    def __init__(self,
                 ann_file: Optional[str] = None,
                 gt_keypoint_field: str = 'goliath_wholebody_kpts',
                 parts: Sequence[str] = PARTS_308,
                 **kwargs) -> None:
        if 'sigmas' in kwargs:
            raise TypeError('Keypoints308Metric uses the 308 sigmas of '
                            'keypoints308.json; use KeypointOKSMetric for '
                            'other sigmas.')
        info = load_keypoints308_info()
        unknown = [p for p in parts if p not in info['groups']]
        if unknown:
            raise ValueError(f'Unknown part(s) {unknown}; the 308 layout has '
                             f'{sorted(info["groups"])}.')
        for name, size in PART_SIZES_308.items():
            assert len(info['groups'][name]) == size, (name, size)
        super().__init__(
            ann_file=ann_file, sigmas=info['sigmas'],
            gt_keypoint_field=gt_keypoint_field,
            parts={p: info['groups'][p] for p in parts}, **kwargs)

    @KeypointOKSMetric.dataset_meta.setter
    def dataset_meta(self, dataset_meta: dict) -> None:
        num = (dataset_meta or {}).get('num_keypoints')
        if num is not None and num != 308:
            raise ValueError(
                f'Keypoints308Metric evaluates 308 keypoints but the dataset '
                f'metainfo has num_keypoints={num}; use KeypointOKSMetric with '
                'that dataset.')
        KeypointOKSMetric.dataset_meta.fset(self, dataset_meta)
