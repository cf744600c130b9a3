"""What the dense tasks share: a DenseEstimator config recognised by its head.

Each dense task (its own module) subclasses :class:`DenseTask` with its head
types, its checkpoint marker, its inferencer, its writer and its drawing.
Official dense checkpoints keep their ``decode_head.`` prefix: the
estimator calls its head ``decode_head`` too, so no key is renamed.
"""
import os.path as osp
from typing import List, Optional, Sequence

import numpy as np
from mmengine.config import Config

from .base import BaseTask, visualization_hooks

DENSE_MODEL_TYPES = ('DenseEstimator', 'sapiens2_mm.DenseEstimator')
DENSE_SHOW_HOOK = 'DenseVisualizationHook'


class DenseTask(BaseTask):
    """A dense task on :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Class attributes (besides :class:`BaseTask`'s):
        head_types: ``decode_head.type`` values that make a config this task.
    """
    head_types: Sequence[str] = ()
    official_renames: dict = {}

    def matches(self, cfg: Config) -> bool:
        model = cfg.model
        head = model.get('decode_head') or {}
        return (model.get('type') in DENSE_MODEL_TYPES
                and head.get('type') in self.head_types)

    def dataset_meta(self, cfg: Config) -> dict:
        """The test dataset's ``METAINFO`` (its task name) and the config's
        ``test_dataloader.dataset.metainfo``, plus ``input_size`` (H, W)."""
        from ...registry import DATASETS
        dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
        meta = {}
        if dataset.get('type') is not None:
            cls = dataset.type if isinstance(dataset.type, type) else \
                DATASETS.get(dataset.type)
            meta.update(getattr(cls, 'METAINFO', None) or {})
        meta.update(dataset.get('metainfo') or {})
        meta.setdefault('task', self.name)
        meta['input_size'] = tuple(cfg.model.backbone.img_size)
        return meta

    def default_inference_pipeline(self, cfg: Config) -> List[dict]:
        """Centred letterbox to the backbone's ``img_size`` (the official
        test transform, ``int()`` sizes) and packing. A 4K backbone
        (``use_tokenizer``) gets the even letterbox (``align=2``) its
        half-resolution heads need (docs/4k.md)."""
        height, width = cfg.model.backbone.img_size
        align = 2 if cfg.model.backbone.get('use_tokenizer') else 1
        return [
            dict(type='DenseResizePad', height=height, width=width,
                 size_rounding='floor', resize_targets=False, align=align),
            dict(type='PackDenseInputs', test_mode=True),
        ]

    # -- tools/test.py --show-dir --------------------------------------------
    def enable_show_dir(self, cfg: Config, show_dir: str) -> str:
        """:class:`~sapiens2_mm.engine.hooks.DenseVisualizationHook`,
        writing ``show_dir/<image name>`` = ``[image | prediction]``."""
        hooks = visualization_hooks(cfg)
        if not hooks:
            cfg.custom_hooks = list(cfg.get('custom_hooks') or []) + [
                dict(type=DENSE_SHOW_HOOK)]
            hooks = visualization_hooks(cfg)
        for hook in hooks:
            hook.update(interval=1, enable=True, out_dir=show_dir)
        return show_dir

    # -- drawing -------------------------------------------------------------
    def visualize(self, frame, result, meta: dict,
                  args) -> Optional[np.ndarray]:
        """``[image | prediction]`` (the official demos' layout)."""
        from ...visualization import draw_dense_prediction
        return draw_dense_prediction(frame.image, dict(
            pred_normal=result.normal, pred_depth=result.depth,
            pred_albedo=result.albedo))


def frame_entry(frame, result) -> dict:
    """The index fields every dense frame records."""
    entry = dict(image_name=frame.name, image_size=list(result.image_size))
    if frame.video is not None:
        entry.update(video=osp.basename(frame.video),
                     frame_index=frame.frame_index)
    return entry
