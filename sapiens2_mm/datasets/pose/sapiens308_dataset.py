"""COCO-format dataset of 308-keypoint annotations (docs/pose.md)."""
import copy
import logging
from collections import Counter
from typing import Dict, List, Optional

import numpy as np
from mmengine.logging import print_log
from mmpose.datasets.datasets.base import BaseCocoStyleDataset

from ...metainfo.pose import keypoints308_dataset_info
from ...registry import DATASETS


@DATASETS.register_module()
class Sapiens308Dataset(BaseCocoStyleDataset):
    """Top-down dataset for COCO-style json files with 308 keypoints per person.

    Each annotation carries ``bbox`` (xywh) and ``goliath_wholebody_kpts``
    (308 x 3 = x, y, v); ``tools/dataset_converters`` writes such files from
    COCO-WholeBody. The box is clipped to the image, as the official eval
    dataset does; keypoints with ``v > 0`` are visible.

    Bad annotations never reach the pipeline: a keypoint list of the wrong
    length raises ``ValueError`` naming the annotation (the file is for another
    layout); annotations without ``bbox`` or keypoints, crowd annotations,
    boxes that are empty after clipping to the image (zero-area or fully
    outside), boxes or labelled keypoints with NaN/inf coordinates and
    persons without labelled keypoints are skipped, counted in
    :attr:`skipped` (reason -> count) and summarised in one warning.

    Args:
        keypoint_field: annotation key of the flat (K*3) keypoint list.
        min_visible_keypoints: training only: skip persons with fewer
            visible keypoints (the official training sampler uses 8).
        min_visible_body_keypoints: training only: skip persons with fewer
            visible keypoints among the first 21 (body + feet; official 6).
        **kwargs: see mmpose's ``BaseCocoStyleDataset``; ``metainfo``
            defaults to the packaged 308-keypoint table.
    """

    METAINFO: dict = keypoints308_dataset_info()

    def __init__(self, *args, keypoint_field: str = 'goliath_wholebody_kpts',
                 min_visible_keypoints: int = 0,
                 min_visible_body_keypoints: int = 0, **kwargs):
        self.keypoint_field = keypoint_field
        self.min_visible_keypoints = min_visible_keypoints
        self.min_visible_body_keypoints = min_visible_body_keypoints
        self.skipped: Dict[str, int] = Counter()
        super().__init__(*args, **kwargs)

    def _skip(self, reason: str) -> None:
        self.skipped[reason] += 1
        return None

    def parse_data_info(self, raw_data_info: dict) -> Optional[dict]:
        """One annotation -> data info with (1, K, 2) keypoints, or None."""
        ann = raw_data_info['raw_ann_info']
        img = raw_data_info['raw_img_info']
        if 'bbox' not in ann:
            return self._skip('missing bbox')
        if self.keypoint_field not in ann:
            return self._skip(f'missing {self.keypoint_field}')
        num_kpts = self._metainfo['num_keypoints']
        flat = np.asarray(ann[self.keypoint_field], dtype=np.float32)
        if flat.size != num_kpts * 3:
            raise ValueError(
                f'Annotation id={ann.get("id")} (image {img.get("file_name")}) '
                f'in {self.ann_file} has {flat.size} values in '
                f'"{self.keypoint_field}", expected {num_kpts} keypoints x 3 = '
                f'{num_kpts * 3}. Is the file for another keypoint layout? '
                'Convert COCO-WholeBody files with tools/dataset_converters.')
        if len(ann['bbox']) != 4:
            raise ValueError(
                f'Annotation id={ann.get("id")} in {self.ann_file} has bbox '
                f'{ann["bbox"]}, expected [x, y, w, h].')
        kpts = flat.reshape(1, num_kpts, 3)
        box = np.asarray(ann['bbox'], dtype=np.float64)
        if not np.isfinite(box).all():
            # np.clip keeps NaN and NaN comparisons are False, so the empty
            # box test below would let it through (then black crops)
            return self._skip('non-finite bbox')
        labelled = kpts[0, :, 2] > 0
        if not np.isfinite(kpts[0, labelled, :2]).all():
            return self._skip('non-finite labelled keypoint')
        img_w, img_h = img['width'], img['height']
        x, y, w, h = box
        x1, x2 = np.clip([x, x + w], 0, img_w - 1)
        y1, y2 = np.clip([y, y + h], 0, img_h - 1)
        visible = (kpts[..., 2] > 0).astype(np.float32)
        area = ann.get('area', max((x2 - x1) * (y2 - y1) * 0.53, 1.0))
        return {
            'img_id': ann['image_id'],
            'img_path': img['img_path'],
            'bbox': np.array([[x1, y1, x2, y2]], dtype=np.float32),
            'bbox_score': np.ones(1, dtype=np.float32),
            'num_keypoints': int(ann.get('num_keypoints', visible.sum())),
            'keypoints': kpts[..., :2],
            'keypoints_visible': visible,
            'area': np.array(area, dtype=np.float32),
            'iscrowd': ann.get('iscrowd', 0),
            'segmentation': ann.get('segmentation', None),
            'id': ann['id'],
            'category_id': np.array(ann.get('category_id', 1)),
            'raw_ann_info': copy.deepcopy(ann),
        }

    def _too_few_visible(self, info: dict) -> bool:
        visible = info['keypoints_visible'][0]
        return (visible.sum() < self.min_visible_keypoints
                or visible[:21].sum() < self.min_visible_body_keypoints)

    def _get_topdown_data_infos(self, instance_list: List[Dict]) -> List[Dict]:
        kept = []
        for info in instance_list:
            x1, y1, x2, y2 = info['bbox'][0]
            if info['iscrowd']:
                self._skip('crowd')
            elif x2 - x1 <= 0 or y2 - y1 <= 0:
                self._skip('empty box after clipping to the image')
            elif info['num_keypoints'] == 0 or not info['keypoints_visible'].any():
                self._skip('no labelled keypoints')
            elif not self.test_mode and self._too_few_visible(info):
                self._skip('fewer visible keypoints than the training minimum')
            else:
                kept.append(info)
        if self.skipped:
            print_log(
                f'{type(self).__name__}: skipped {sum(self.skipped.values())} '
                f'annotations of {self.ann_file}: {dict(self.skipped)}',
                logger='current', level=logging.WARNING)
        return kept
