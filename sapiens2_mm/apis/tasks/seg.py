"""The seg task: body-part segmentation with an mmseg EncoderDecoder."""
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
from mmengine.config import Config

from ...registry import TASKS
from ...utils.setup_env import qualified_type
from ...utils.user_errors import ConfigError
from ..seg_inferencer import SegInferencer
from ..writers import TaskWriter, save_array
from .base import BaseTask, default_visualization_hooks
from .options import TaskOptions, option

SEG_HEAD_TYPES = ('SegHead', )
# Any mmseg encoder-decoder is a segmentation model (e.g. with mmseg.FCNHead).
SEG_MODEL_TYPES = ('mmseg.EncoderDecoder', )
# Rows drawn at a time: the overlay of a large photo stays a few 100 MB.
DRAW_BAND_ROWS = 512


def seg_dataset_meta(cfg: Config) -> dict:
    """``classes`` / ``palette`` (and ``flip_swap_pairs``) of a seg config.

    The test dataset's ``metainfo`` if it names classes, else its class's
    ``METAINFO`` (``Seg29Dataset``, a stock mmseg dataset such as
    ``ADE20KDataset``), else, for a 29-class model, the packaged Sapiens2
    body-part table.

    Raises:
        ValueError: no class names for the model's class count.
    """
    from ...metainfo.seg29 import seg29_metainfo
    from ...registry import DATASETS
    num_classes = cfg.model.decode_head.num_classes
    meta = None
    dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
    cls = DATASETS.get(qualified_type(cfg, dataset.type)) if isinstance(
        dataset.get('type'), str) else dataset.get('type')
    if 'classes' in (dataset.get('metainfo') or {}):
        meta = dict(dataset.metainfo)
    elif 'classes' in (getattr(cls, 'METAINFO', None) or {}):
        meta = dict(cls.METAINFO)
    elif num_classes == 29:
        meta = seg29_metainfo()
    if meta is None or len(meta['classes']) != num_classes:
        raise ConfigError(
            f'No class names/palette for a {num_classes}-class seg model; '
            'set test_dataloader.dataset.metainfo=dict(classes=..., '
            'palette=...).')
    return meta


def side_by_side_banded(image: np.ndarray, label_map: np.ndarray,
                        palette) -> np.ndarray:
    """``[image | 50 % palette overlay]`` (the official seg demo's drawing),
    computed in bands of rows so a large photo needs no float copies of the
    whole image."""
    from ...visualization import seg_side_by_side
    h, w = image.shape[:2]
    out = np.empty((h, 2 * w, 3), np.uint8)
    for top in range(0, h, DRAW_BAND_ROWS):
        rows = slice(top, min(h, top + DRAW_BAND_ROWS))
        out[rows] = seg_side_by_side(image[rows], label_map[rows], palette)
    return out


@dataclass(frozen=True)
class SegOptions(TaskOptions):
    """The drawing's class key."""
    no_legend: bool = option(False, 'draw no class key under the drawings '
                             '(the official demo layout)')


class SegWriter(TaskWriter):
    """``<stem>_seg.npy``: the (H, W) uint8 label map at the input size."""

    def write(self, frame, result) -> dict:
        path = save_array(self.layout.frame_path(frame, '_seg.npy'),
                          result.label_map)
        rel = self.layout.relative(path)
        return {'outputs': [rel], 'label_map': rel}

    def finalize(self, records: List[dict]) -> List[str]:
        count = sum('label_map' in r for r in records)
        return [f'label maps: {count} x <stem>_seg.npy (uint8 class indices)']


@TASKS.register_module(name='seg')
class SegTask(BaseTask):
    """29-class body-part segmentation."""
    summary = 'body-part segmentation (label maps at the input size)'
    inferencer = SegInferencer
    options_class = SegOptions

    def matches(self, cfg: Config) -> bool:
        head = cfg.model.get('decode_head') or {}
        return (qualified_type(cfg, head.get('type')) in SEG_HEAD_TYPES
                or qualified_type(cfg, cfg.model.get('type')) in SEG_MODEL_TYPES)

    def dataset_meta(self, cfg: Config) -> dict:
        return seg_dataset_meta(cfg)

    def default_inference_pipeline(self, cfg: Config) -> List[dict]:
        height, width = cfg.model.backbone.img_size
        return [
            dict(type='SegResize', height=height, width=width,
                 test_mode=True),
            dict(type='mmseg.PackSegInputs'),
        ]

    def open_writer(self, layout, model, options: SegOptions) -> SegWriter:
        return SegWriter(layout, model.dataset_meta, options)

    def visualize(self, frame, result, meta: dict,
                  options: SegOptions) -> Optional[np.ndarray]:
        """``[image | overlay]`` and, unless ``--no-legend``, the key of
        every class under it (names of classes absent from the frame in
        grey; the key's height depends only on the width, so a video's
        frames keep one size)."""
        drawing = side_by_side_banded(frame.image, result.label_map,
                                      meta['palette'])
        if options.no_legend:
            return drawing
        from ...visualization.legends import class_legend
        counts = np.bincount(np.asarray(result.label_map).ravel(),
                             minlength=len(meta['classes']))
        legend = class_legend(drawing.shape[1], meta['classes'],
                              meta['palette'], np.flatnonzero(counts))
        return np.concatenate([drawing, legend], axis=0)

    def enable_show_dir(self, cfg: Config, show_dir: str) -> str:
        """mmseg's SegVisualizationHook; its LocalVisBackend writes the
        images to ``show_dir/vis_data/vis_image`` (returned)."""
        import os.path as osp
        hooks = default_visualization_hooks(
            cfg, 'mmseg.SegVisualizationHook',
            dict(type='mmseg.SegLocalVisualizer', alpha=0.5,
                 vis_backends=[dict(type='LocalVisBackend')]))
        for hook in hooks:
            hook.update(interval=1, draw=True)
        if cfg.get('visualizer') is not None:
            cfg.visualizer['save_dir'] = show_dir
        return osp.join(show_dir, 'vis_data', 'vis_image')
