"""The pose task: top-down keypoints with mmpose's TopdownPoseEstimator."""
import json
import os.path as osp
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
from mmengine.config import Config

from ...registry import TASKS
from ...utils.setup_env import qualified_type
from ...utils.user_errors import ConfigError, OptionError
from ..box_sources import BoxFile, DetectorBoxes, WholeImageBoxes
from ..inputs import file_identity
from ..pose_inferencer import PoseInferencer
from ..writers import TaskWriter, write_text
from .base import BaseTask, default_visualization_hooks
from .options import TaskOptions, option

POSE_MODEL_TYPES = ('mmpose.TopdownPoseEstimator', )


def pose_dataset_meta(cfg: Config) -> dict:
    """Keypoint names, colors, skeleton and flip indices of a pose config.

    The test dataset's ``metainfo`` if given, else its class's ``METAINFO``
    looked up in this package's registry (so ``Sapiens308Dataset`` and
    ``mmpose.CocoDataset`` both resolve), else, for a bare 308-keypoint model
    config, the Sapiens2 layout.

    Raises:
        ValueError: no metainfo, or one of another keypoint count.
    """
    from mmpose.datasets.datasets.utils import parse_pose_metainfo

    from ...metainfo.pose import keypoints308_dataset_info
    from ...registry import DATASETS
    num_kpts = cfg.model.head.out_channels
    dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
    metainfo = None
    if dataset.get('metainfo') is not None:
        metainfo = dataset.metainfo
    elif dataset.get('type') is not None:
        cls = dataset.type if isinstance(dataset.type, type) else \
            DATASETS.get(qualified_type(cfg, dataset.type))
        if cls is None:
            raise ConfigError(
                f'The test dataset type {dataset.type!r} is not registered '
                '(own types unprefixed, mmpose types as "mmpose.<Name>").')
        metainfo = getattr(cls, 'METAINFO', None)
    elif num_kpts == 308:  # a bare model config: the Sapiens2 set
        metainfo = keypoints308_dataset_info()
    meta = parse_pose_metainfo(dict(metainfo)) if metainfo else None
    if meta is None or meta.get('num_keypoints') != num_kpts:
        raise ConfigError(
            f'The config\'s test dataset gives no metainfo for {num_kpts} '
            'keypoints (got '
            f'{None if meta is None else meta.get("num_keypoints")}). Set '
            'test_dataloader.dataset.metainfo=dict(from_file=...).')
    return meta


def json_label(out_dir: str) -> str:
    """Official naming of the predictions JSON: the output folder name, or its
    parent's when the folder is called ``*_output``."""
    out_dir = osp.abspath(out_dir)
    name = osp.basename(out_dir)
    return osp.basename(osp.dirname(out_dir)) if name.endswith(
        '_output') else name


def drawable(keypoints: np.ndarray, scores: np.ndarray, boxes: np.ndarray,
             height: int, width: int):
    """Keypoints, scores and boxes safe to draw on an (H, W) image.

    Non-finite keypoints get score -inf (never drawn); coordinates are clipped
    to a margin of one image size around the image, which keeps lines leaving
    the image pointing the right way and every value inside cv2's int range.
    """
    kpts = np.asarray(keypoints, np.float64)
    scores = np.asarray(scores, np.float64).copy()
    bad = ~np.isfinite(kpts).all(-1) | ~np.isfinite(scores)
    scores[bad] = -np.inf
    lo = np.array([-width, -height], np.float64)
    hi = np.array([2 * width, 2 * height], np.float64)
    kpts = np.clip(np.nan_to_num(kpts), lo, hi)
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    boxes = np.clip(np.nan_to_num(boxes), np.tile(lo, 2), np.tile(hi, 2))
    return kpts, scores, boxes


@dataclass(frozen=True)
class PoseOptions(TaskOptions):
    """Where the person boxes come from, their thresholds and the drawing."""
    bboxes: Optional[str] = option(
        None, 'person boxes JSON (schema in docs/inference.md)',
        exclusive='boxes')
    det_config: Optional[str] = option(None, 'mmdet detector config',
                                       exclusive='boxes')
    det_checkpoint: Optional[str] = option(
        None, 'detector weights (needs --det-config)')
    bbox_thr: float = option(0.3, 'keep boxes scoring above this (detector '
                             'and --bboxes files)')
    nms_thr: float = option(0.3)
    kpt_thr: float = option(0.3, 'draw keypoints scoring above this')
    radius: int = option(3)
    thickness: int = option(1)

    def check(self) -> None:
        """Each option's values; a detector checkpoint only with its
        config, and one box source."""
        super().check()
        if self.det_checkpoint and not self.det_config:
            raise OptionError(
                '--det-checkpoint needs --det-config (the detector config '
                'the weights belong to).')


class PoseWriter(TaskWriter):
    """Keypoints go into the index line; the predictions JSON (official
    schema, docs/inference.md) is rebuilt from all lines at the end."""

    def write(self, frame, result) -> dict:
        return {'outputs': [], 'frame': result.to_dict()}

    def finalize(self, records: List[dict]) -> List[str]:
        frames = [r['frame'] for r in records if 'frame' in r]
        names = self.meta.get('keypoint_id2name', {})
        num = int(self.meta['num_keypoints'])
        videos = [f['video'] for f in frames if f.get('video')]
        data = dict(
            video=videos[0] if videos else None,
            image_size=frames[0]['image_size'] if frames else None,
            num_keypoints=num,
            keypoint_names=[names.get(i, str(i)) for i in range(num)],
            kpt_thr_used=self.options.kpt_thr,
            frames=frames)
        path = osp.join(self.layout.out_dir,
                        f'{json_label(self.layout.out_dir)}_predictions.json')
        write_text(path, json.dumps(data))
        return [f'keypoints: {path} ({len(frames)} frame(s))']


@TASKS.register_module(name='pose')
class PoseTask(BaseTask):
    """Top-down 2-D keypoints (308 / COCO-17 / COCO-WholeBody)."""
    summary = 'top-down keypoints (person boxes from a file, a detector or '\
        'the whole image)'
    inferencer = PoseInferencer
    options_class = PoseOptions

    def matches(self, cfg: Config) -> bool:
        return qualified_type(cfg, cfg.model.get('type')) in POSE_MODEL_TYPES

    def dataset_meta(self, cfg: Config) -> dict:
        return pose_dataset_meta(cfg)

    def prepare_model_config(self, cfg: Config) -> None:
        cfg.model['train_cfg'] = None

    def default_inference_pipeline(self, cfg: Config) -> Optional[List[dict]]:
        decoder = cfg.model.head.get('decoder') or {}
        if 'input_size' not in decoder:
            return None
        return [
            dict(type='mmpose.GetBBoxCenterScale', padding=1.25),
            dict(type='Sapiens2TopdownAffine',
                 input_size=decoder['input_size']),
            dict(type='mmpose.PackPoseInputs'),
        ]

    def inferencer_kwargs(self, options: PoseOptions,
                          device: str = 'cpu') -> dict:
        """The person box source: a file, a detector or the whole image."""
        if options.bboxes:
            boxes = BoxFile(options.bboxes, bbox_thr=options.bbox_thr)
        elif options.det_config:
            boxes = DetectorBoxes(options.det_config, options.det_checkpoint,
                                  device, options.bbox_thr, options.nms_thr)
        else:
            boxes = WholeImageBoxes()
        return dict(boxes=boxes)

    def index_options(self, options: PoseOptions) -> dict:
        """Non-default box, threshold and drawing options: a re-run with
        another bbox file (or the same file edited: its size and
        modification time are recorded), detector or threshold is refused,
        so one folder never mixes two settings and ``kpt_thr_used`` holds
        for every frame."""
        recorded = {}
        if options.bboxes:
            recorded['bboxes'] = [osp.abspath(options.bboxes),
                                  file_identity(options.bboxes)]
        if options.det_config:
            recorded['det_config'] = osp.abspath(options.det_config)
        if options.det_checkpoint:
            recorded['det_checkpoint'] = [
                osp.abspath(options.det_checkpoint),
                file_identity(options.det_checkpoint)]
        changed = options.changed()
        for key in ('bbox_thr', 'nms_thr', 'kpt_thr', 'radius', 'thickness'):
            if key in changed:
                recorded[key] = changed[key]
        return {'pose_options': recorded} if recorded else {}

    def run_report(self, inferencer) -> List[str]:
        report = getattr(inferencer.boxes, 'report', None)
        return report() if callable(report) else []

    def open_writer(self, layout, model, options: PoseOptions) -> PoseWriter:
        return PoseWriter(layout, model.dataset_meta, options)

    def visualize(self, frame, result, meta: dict,
                  options: PoseOptions) -> Optional[np.ndarray]:
        from ...visualization import draw_pose
        h, w = frame.image.shape[:2]
        kpts, scores, boxes = drawable(result.keypoints,
                                       result.keypoint_scores, result.bboxes,
                                       h, w)
        return draw_pose(frame.image, kpts, scores, meta, boxes,
                         options.kpt_thr, options.radius, options.thickness)

    def enable_show_dir(self, cfg: Config, show_dir: str) -> str:
        """mmpose's PoseVisualizationHook, writing ``show_dir/<image>``."""
        hooks = default_visualization_hooks(
            cfg, 'mmpose.PoseVisualizationHook',
            dict(type='mmpose.PoseLocalVisualizer',
                 vis_backends=[dict(type='LocalVisBackend')]))
        for hook in hooks:
            hook.update(interval=1, enable=True, out_dir=show_dir)
        return show_dir

