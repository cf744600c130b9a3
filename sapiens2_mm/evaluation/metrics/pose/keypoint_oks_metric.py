"""COCO-style OKS AP/AR metric for any keypoint layout, with per-part AP."""
import json
import os.path as osp
from collections import OrderedDict, defaultdict
from typing import Dict, List, Optional, Sequence

import numpy as np
from mmengine.evaluator import BaseMetric
from mmengine.fileio import get_local_path
from mmengine.logging import MessageHub, MMLogger, print_log

from sapiens2_mm.registry import METRICS

from .coco_gt import FieldSpec, build_gt, field_names
from .coco_keypoint_eval import (
    CONVENTIONS,
    STAT_NAMES,
    ImageDet,
    coco_keypoint_eval,
)
from .oks import as_index, instance_scores, oks_nms

_ALL = '__all__'


def _to_numpy(value) -> np.ndarray:
    if hasattr(value, 'detach'):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _extent_area(xy: np.ndarray) -> np.ndarray:
    """Area of the keypoints' bounding box, (N, K, 2) -> (N,)."""
    if xy.shape[0] == 0:
        return np.zeros(0)
    span = xy.max(axis=1) - xy.min(axis=1)
    return span[:, 0] * span[:, 1]


@METRICS.register_module()
class KeypointOKSMetric(BaseMetric):
    """COCO keypoint AP/AR (OKS) for any keypoint layout, plus per-part AP.

    Interface and instance handling follow mmpose's ``CocoMetric`` (same data
    samples, ``ann_file``/``raw_ann_info`` ground truth, instance scoring,
    OKS-NMS, ``format_only``/``outfile_prefix``), so it is a drop-in for it; the
    evaluation itself is :func:`coco_keypoint_eval` (vectorised COCOeval) and
    evaluates the whole layout and any number of keypoint subsets in one pass.
    With the defaults the numbers are those of mmpose's CocoMetric, i.e.
    xtcocotools' COCOeval; ``coco_convention='pycocotools'`` gives
    pycocotools' COCOeval instead (they differ only on detections whose
    keypoint scores are all 0 and on GTs whose ``num_keypoints`` disagrees
    with their visibility flags).
    Results are gathered from all ranks by :class:`BaseMetric` (one entry per
    data sample, padded duplicates dropped) and evaluated on rank 0.

    Args:
        ann_file: COCO-format GT json. If None, the GT comes from each data
            sample's ``raw_ann_info`` (or the ann file that mmpose datasets
            publish in the MessageHub).
        sigmas: per-keypoint OKS sigmas (K,). None: ``dataset_meta['sigmas']``.
        gt_keypoint_field: annotation field with the K keypoints, or a list of
            fields concatenated in order (COCO-WholeBody 133).
        parts: optional ``{name: keypoint ids}``; each part is also evaluated
            with the sigmas of its ids, and reported as ``'{name}/AP'`` and
            ``'{name}/AR'``.
        use_area: normalize OKS by the GT ``area`` (else 0.53 x box area).
        score_mode: instance score, see :func:`instance_scores`.
        keypoint_score_thr: keypoint score threshold of ``'bbox_keypoint'``.
        nms_mode: ``'oks_nms'`` or ``'none'``.
        nms_thr: OKS-NMS threshold (instances with OKS > thr are dropped).
        nms_area_source: area of an instance in OKS-NMS: ``'keypoints'``
            (area of the keypoints' bounding box, the official rule) or
            ``'bbox_scale'`` (product of ``gt_instances.bbox_scales`` when the
            sample has them, as mmpose's CocoMetric).
        det_area_source: area of a detection for the medium/large ranges:
            ``'keypoints'`` (keypoint extent of the evaluated keypoints, what
            COCO's ``loadRes`` computes for results without a box) or
            ``'bbox'`` (area of ``pred_instances.bboxes``, what it computes
            when mmpose writes the box into the results).
        max_dets: detections kept per image (COCO: 20).
        coco_convention: ``'xtcocotools'`` (default; what mmpose's CocoMetric
            and the official evaluator use: detections whose keypoint scores
            are all 0 are dropped, a GT without a keypoint of visibility > 0
            is ignored) or ``'pycocotools'`` (every detection counts, a GT is
            ignored when its ``num_keypoints`` is 0). See
            :mod:`.coco_keypoint_eval`.
        format_only: only write ``{outfile_prefix}.keypoints.json``.
        outfile_prefix: where to write the results json (also when
            evaluating, if given).
        collect_device: ``'cpu'`` or ``'gpu'``, for the cross-rank gather.
        prefix: metric name prefix (default :attr:`default_prefix`).
    """
    default_prefix: Optional[str] = 'coco'

    def __init__(self,
                 ann_file: Optional[str] = None,
                 sigmas: Optional[Sequence[float]] = None,
                 gt_keypoint_field: FieldSpec = 'keypoints',
                 parts: Optional[Dict[str, Sequence[int]]] = None,
                 use_area: bool = True,
                 score_mode: str = 'bbox_keypoint',
                 keypoint_score_thr: float = 0.2,
                 nms_mode: str = 'oks_nms',
                 nms_thr: float = 0.9,
                 nms_area_source: str = 'keypoints',
                 det_area_source: str = 'keypoints',
                 max_dets: int = 20,
                 coco_convention: str = 'xtcocotools',
                 format_only: bool = False,
                 outfile_prefix: Optional[str] = None,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        self._check_choice('score_mode', score_mode,
                           ('bbox', 'bbox_keypoint', 'keypoint', 'bbox_rle'))
        self._check_choice('nms_mode', nms_mode, ('oks_nms', 'none'))
        self._check_choice('nms_area_source', nms_area_source,
                           ('keypoints', 'bbox_scale'))
        self._check_choice('det_area_source', det_area_source,
                           ('keypoints', 'bbox'))
        self._check_choice('coco_convention', coco_convention, CONVENTIONS)
        if format_only and outfile_prefix is None:
            raise ValueError(
                'format_only=True writes the results json and evaluates '
                'nothing, so it needs outfile_prefix (e.g. "work_dirs/test").')
        if ann_file is not None and not osp.isfile(ann_file) and \
                '://' not in ann_file:
            raise FileNotFoundError(
                f'ann_file {ann_file!r} does not exist; give the COCO-format GT '
                'json, or ann_file=None to take the GT from the data samples.')
        self.ann_file = ann_file
        self.sigmas = None if sigmas is None else np.asarray(
            sigmas, dtype=np.float64)
        self.gt_keypoint_field = gt_keypoint_field
        self.parts = dict(parts or {})
        self.use_area = use_area
        self.score_mode = score_mode
        self.keypoint_score_thr = keypoint_score_thr
        self.nms_mode = nms_mode
        self.nms_thr = nms_thr
        self.nms_area_source = nms_area_source
        self.det_area_source = det_area_source
        self.max_dets = max_dets
        self.coco_convention = coco_convention
        self.format_only = format_only
        self.outfile_prefix = outfile_prefix
        self._gt_json = None
        self._gt_cache = None

    @staticmethod
    def _check_choice(name, value, allowed):
        if value not in allowed:
            raise ValueError(f'{name}={value!r} is not supported; use one of '
                             f'{list(allowed)}.')

    @property
    def dataset_meta(self) -> Optional[dict]:
        return self._dataset_meta

    @dataset_meta.setter
    def dataset_meta(self, dataset_meta: dict) -> None:
        self._dataset_meta = dataset_meta
        if self.ann_file is None and dataset_meta:
            # mmpose COCO-style datasets publish their annotation file here
            name = dataset_meta.get('dataset_name')
            ann_file = MessageHub.get_current_instance().get_info(
                f'{name}_ann_file', None)
            if ann_file is not None:
                self.ann_file = ann_file
                print_log(f'{type(self).__name__}: GT from {ann_file}',
                          'current')

    # ------------------------------------------------------------------ process
    def process(self, data_batch, data_samples: Sequence[dict]) -> None:
        """Store the predictions (and GT if there is no ann_file) per sample.

        Args:
            data_batch: unused.
            data_samples: mmpose-style outputs, each with ``id``, ``img_id``,
                ``pred_instances.keypoints`` (N, K, 2) in image coordinates,
                ``pred_instances.keypoint_scores`` (N, K) and optionally
                ``pred_instances.bbox_scores``/``bboxes`` (xyxy),
                ``gt_instances.bbox_scores``/``bbox_scales``, ``category_id``,
                ``raw_ann_info`` and ``ori_shape``.
        """
        for sample in data_samples:
            if 'pred_instances' not in sample:
                raise ValueError(
                    f'{type(self).__name__}: data sample img_id='
                    f'{sample.get("img_id")} has no `pred_instances`; the model '
                    "must be run with mode='predict'.")
            pred_inst = sample['pred_instances']
            gt_inst = sample.get('gt_instances', {})
            kpts = _to_numpy(pred_inst['keypoints'])
            kpt_scores = _to_numpy(pred_inst['keypoint_scores'])
            if kpts.ndim != 3 or kpts.shape[-1] != 2 or \
                    kpt_scores.shape != kpts.shape[:2]:
                raise ValueError(
                    f'{type(self).__name__}: img_id={sample.get("img_id")}: '
                    f'pred keypoints {tuple(kpts.shape)} and keypoint_scores '
                    f'{tuple(kpt_scores.shape)} must be (N, K, 2) and (N, K).')
            self._check_num_keypoints(kpts.shape[1], sample.get('img_id'))
            num = len(kpts)
            if 'bbox_scores' in pred_inst:
                bbox_scores = _to_numpy(pred_inst['bbox_scores'])
            elif 'bbox_scores' in gt_inst and \
                    len(gt_inst['bbox_scores']) == num:
                bbox_scores = _to_numpy(gt_inst['bbox_scores'])
            else:
                bbox_scores = np.ones(num)
            pred = dict(
                id=sample.get('id'), img_id=sample['img_id'],
                # mmpose packs category_id as an array of one element.
                category_id=int(np.asarray(
                    sample.get('category_id', 1)).reshape(-1)[0]),
                keypoints=kpts,
                keypoint_scores=kpt_scores, bbox_scores=bbox_scores)
            if 'bboxes' in pred_inst:
                box = _to_numpy(pred_inst['bboxes']).reshape(-1, 4)
                pred['bbox_areas'] = (box[:, 2] - box[:, 0]) * (
                    box[:, 3] - box[:, 1])
            if 'bbox_scales' in gt_inst:
                pred['scale_areas'] = np.prod(
                    _to_numpy(gt_inst['bbox_scales']), axis=1)
            gt = None
            if self.ann_file is None and not self.format_only:
                if 'raw_ann_info' not in sample:
                    raise ValueError(
                        f'{type(self).__name__}: no ann_file and data sample '
                        f'img_id={sample["img_id"]} has no `raw_ann_info`; '
                        'set ann_file to the GT json.')
                anns = sample['raw_ann_info']
                shape = sample.get('ori_shape', (0, 0))
                gt = dict(img_id=sample['img_id'], height=shape[0],
                          width=shape[1],
                          anns=anns if isinstance(anns, list) else [anns])
            self.results.append((pred, gt))

    def _check_num_keypoints(self, num: int, img_id) -> None:
        sigmas = self._sigmas(required=False)
        if sigmas is not None and num != len(sigmas):
            raise ValueError(
                f'{type(self).__name__}: img_id={img_id}: predictions have '
                f'{num} keypoints but the metric has {len(sigmas)} sigmas. The '
                'model, the dataset metainfo and the metric must use the same '
                'keypoint layout.')

    def _sigmas(self, required: bool = True) -> Optional[np.ndarray]:
        if self.sigmas is not None:
            return self.sigmas
        meta = self.dataset_meta or {}
        if 'sigmas' in meta:
            return np.asarray(meta['sigmas'], dtype=np.float64)
        if required:
            raise ValueError(
                f'{type(self).__name__} has no sigmas: pass `sigmas=` or run it '
                "with a dataset whose metainfo has 'sigmas'.")
        return None

    # ---------------------------------------------------------- ground truth
    def _load_gt_json(self) -> dict:
        if self._gt_json is None:
            with get_local_path(self.ann_file) as path:
                with open(path) as f:
                    data = json.load(f)
            for key in ('images', 'annotations', 'categories'):
                if key not in data:
                    raise ValueError(
                        f'{self.ann_file} is not a COCO-format GT file: it has '
                        f'no {key!r} list (keys: {sorted(data)}).')
            self._gt_json = data
        return self._gt_json

    def _ground_truth(self, gt_items: List[Optional[dict]], num_kpts: int):
        if self.ann_file is not None:
            # the GT file does not change between evaluations: parse it once
            key = (self.ann_file, str(self.gt_keypoint_field), num_kpts,
                   self.use_area)
            if self._gt_cache is None or self._gt_cache[0] != key:
                self._gt_cache = (key, self._gt_from_file(num_kpts))
            return self._gt_cache[1], self.ann_file
        images, anns, seen = [], [], set()
        for item in gt_items:
            images.append(item['img_id'])
            for ann in item['anns']:
                if ann is None or ann['id'] in seen:
                    continue
                seen.add(ann['id'])
                anns.append(ann)
        cats = sorted({a['category_id'] for a in anns}) or [1]
        source = 'the data samples (raw_ann_info)'
        return build_gt(sorted(set(images)), anns, cats,
                        self.gt_keypoint_field, num_kpts, self.use_area,
                        source), source

    def _gt_from_file(self, num_kpts: int) -> Dict:
        data = self._load_gt_json()
        return build_gt(sorted({img['id'] for img in data['images']}),
                        data['annotations'],
                        sorted({c['id'] for c in data['categories']}),
                        self.gt_keypoint_field, num_kpts, self.use_area,
                        self.ann_file)

    # --------------------------------------------------------------- compute
    def _group_instances(self, preds: Sequence[dict]) -> Dict:
        """Instances per image, sorted by id with duplicates removed."""
        per_img = defaultdict(list)
        for pred in preds:
            for i in range(len(pred['keypoints'])):
                inst = dict(
                    id=pred['id'], category_id=pred['category_id'],
                    keypoints=np.asarray(pred['keypoints'][i], np.float64),
                    keypoint_scores=np.asarray(pred['keypoint_scores'][i],
                                               np.float64),
                    # as given (float32 from models): the instance score is
                    # computed in these dtypes, as mmpose does
                    raw_keypoint_scores=np.asarray(
                        pred['keypoint_scores'][i]),
                    bbox_score=np.asarray(pred['bbox_scores']).reshape(-1)[i])
                for key in ('bbox_areas', 'scale_areas'):
                    if key in pred:
                        inst[key] = float(pred[key][i])
                per_img[pred['img_id']].append(inst)
        for img_id, insts in per_img.items():
            # de-duplicate by instance id (padded/duplicated samples); ids that
            # are sequences (bottom-up) are kept as they are, like mmpose
            if any(isinstance(x['id'], (list, tuple)) or x['id'] is None
                   for x in insts):
                continue
            insts = sorted(insts, key=lambda x: x['id'])
            per_img[img_id] = [x for j, x in enumerate(insts)
                               if j == 0 or x['id'] != insts[j - 1]['id']]
        return per_img

    def _select_instances(self, insts: List[dict], sigmas: np.ndarray
                          ) -> List[dict]:
        """Score the instances of one image and apply OKS-NMS."""
        scores = instance_scores(
            [x['raw_keypoint_scores'] for x in insts],
            [x['bbox_score'] for x in insts], self.score_mode,
            self.keypoint_score_thr)
        for inst, score in zip(insts, scores):
            inst['score'] = float(score)
        if self.nms_mode == 'none':
            return insts
        xy = np.stack([x['keypoints'] for x in insts])
        areas = _extent_area(xy)
        if self.nms_area_source == 'bbox_scale':
            areas = np.array([x.get('scale_areas', a)
                              for x, a in zip(insts, areas)])
        keep = oks_nms(xy, scores, areas, sigmas, self.nms_thr)
        return [insts[k] for k in keep]

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """Evaluate the gathered results (rank 0).

        Returns:
            dict: ``AP, AP .5, AP .75, AP (M), AP (L), AR, AR .5, AR .75,
            AR (M), AR (L)`` over all keypoints, then ``{part}/AP`` and
            ``{part}/AR`` for each part. Empty with ``format_only``.
        """
        logger = MMLogger.get_current_instance()
        if len(results) == 0:
            raise ValueError(
                f'{type(self).__name__} got no predictions to evaluate: the '
                'evaluation dataloader was empty or process() was never called '
                'with data samples.')
        preds, gt_items = zip(*results)
        sigmas = self._sigmas()
        num_kpts = len(sigmas)
        for pred in preds:
            self._check_num_keypoints(pred['keypoints'].shape[1],
                                      pred['img_id'])
        parts = {_ALL: np.arange(num_kpts)}
        for name, ids in self.parts.items():
            parts[name] = as_index(ids, num_kpts, name)

        selected = {}
        for img_id, insts in self._group_instances(preds).items():
            selected[img_id] = self._select_instances(insts, sigmas)
        if self.outfile_prefix is not None:
            self.results2json(selected, self.outfile_prefix)
        if self.format_only:
            logger.info(f'results are saved in {self.outfile_prefix}.'
                        'keypoints.json')
            return {}

        gts, source = self._ground_truth(gt_items, num_kpts)
        dets = self._detections(selected, gts, source)
        stats = coco_keypoint_eval(gts, dets, sigmas, parts, self.max_dets,
                                   convention=self.coco_convention)

        metrics = OrderedDict(zip(STAT_NAMES, map(float, stats[_ALL])))
        for name in self.parts:
            metrics[f'{name}/AP'] = float(stats[name][0])
            metrics[f'{name}/AR'] = float(stats[name][5])
        self._log_table(stats, logger)
        return metrics

    def _detections(self, selected: Dict, gts: Dict,
                    source: str) -> Dict[tuple, ImageDet]:
        gt_images = {img for _, img in gts}
        grouped = defaultdict(list)
        for img_id, insts in selected.items():
            if img_id not in gt_images:
                raise ValueError(
                    f'Prediction for img_id={img_id} but that image is not in '
                    f'the ground truth ({source}); evaluate with the GT file of '
                    'the dataset that produced the predictions.')
            for inst in insts:
                grouped[(inst['category_id'], img_id)].append(inst)
        dets = {}
        for key, insts in grouped.items():
            xy = np.stack([x['keypoints'] for x in insts])
            score = np.stack([x['keypoint_scores'] for x in insts])
            areas = None  # keypoint extent of each part, computed there
            if self.det_area_source == 'bbox' and all(
                    'bbox_areas' in x for x in insts):
                areas = np.array([x['bbox_areas'] for x in insts])
            dets[key] = ImageDet(
                np.concatenate([xy, score[..., None]], axis=-1),
                np.array([x['score'] for x in insts]), areas)
        return dets

    def _log_table(self, stats: Dict[str, np.ndarray], logger) -> None:
        rows = [('all' if n == _ALL else n, s) for n, s in stats.items()]
        head = f'{"keypoints":<12}' + ''.join(f'{k:>8}' for k in STAT_NAMES)
        lines = [head] + [f'{n:<12}' + ''.join(f'{v:8.4f}' for v in s)
                          for n, s in rows]
        logger.info(f'{type(self).__name__} results:\n' + '\n'.join(lines))

    def results2json(self, selected: Dict[int, List[dict]],
                     outfile_prefix: str) -> str:
        """Write the kept instances as COCO keypoint results.

        Each result has ``image_id``, ``category_id``, ``score`` and the K
        keypoints as x, y, score triplets under the first GT keypoint field
        name; when that is not ``'keypoints'`` and a part named ``'body'``
        exists, the body keypoints are also written under ``'keypoints'`` (the
        official Sapiens2 layout, readable by standard COCO tools).

        Returns:
            str: path of ``{outfile_prefix}.keypoints.json``.
        """
        field = field_names(self.gt_keypoint_field)[0]
        body = self.parts.get('body')
        out = []
        for img_id, insts in selected.items():
            for inst in insts:
                kpts = np.concatenate(
                    [inst['keypoints'], inst['keypoint_scores'][:, None]], 1)
                res = dict(image_id=img_id, category_id=inst['category_id'],
                           score=inst['score'])
                res[field] = kpts.reshape(-1).tolist()
                if field != 'keypoints' and body is not None:
                    res['keypoints'] = kpts[np.asarray(body)].reshape(
                        -1).tolist()
                out.append(res)
        path = f'{outfile_prefix}.keypoints.json'
        with open(path, 'w') as f:
            json.dump(out, f)
        return path
