"""What the dense tasks share: a DenseEstimator config recognised by its head.

Each dense task (its own module) subclasses :class:`DenseTask` with its head
types, its checkpoint marker, its inferencer, its writer and its drawing.
Official dense checkpoints keep their ``decode_head.`` prefix: the
estimator calls its head ``decode_head`` too, so no key is renamed.
"""
import argparse
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from mmengine.config import Config

from ..writers import TaskWriter, save_array, write_image
from .base import BaseTask, visualization_hooks

DENSE_MODEL_TYPES = ('DenseEstimator', 'sapiens2_mm.DenseEstimator')
DENSE_SHOW_HOOK = 'DenseVisualizationHook'


ARRAY_DTYPES = ('float32', 'float16')


class DenseTask(BaseTask):
    """A dense task on :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Class attributes (besides :class:`BaseTask`'s):
        head_types: ``decode_head.type`` values that make a config this task.
        postprocess_flags: the task's post-processing CLI options:
            ``--flag`` -> (head option, allowed values, help); the first
            value is the official demos' order (the default).
        drawn_field: the prediction field its drawings show.
    """
    head_types: Sequence[str] = ()
    postprocess_flags: Dict[str, Tuple[str, Sequence[str], str]] = {}
    drawn_field = ''

    # -- tools/infer.py options ---------------------------------------------
    def add_cli_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Foreground masks, background, array precision and the task's
        post-processing order (docs/inference.md)."""
        group = parser.add_argument_group('foreground masks (drawings and '
                                          'point clouds; arrays unmasked)')
        group.add_argument(
            '--seg-dir', default=None, metavar='DIR',
            help='folder of masks, per photo <stem>.npy (boolean), '
            '<stem>_seg.npy (seg class labels, 0 = background), or an image '
            '(the photo\'s file name, <stem>.png, <stem>_fg.png; first '
            'channel > 0); a photo without one uses the whole frame')
        group.add_argument(
            '--fg-seg', nargs=2, default=None,
            metavar=('SEG_CONFIG', 'SEG_CHECKPOINT'),
            help='take the foreground from this seg model in the same pass '
            '(labels > 0), written as <stem>_fg.png')
        group.add_argument(
            '--background', choices=('color', 'photo'), default='color',
            help='what the drawings show outside the foreground: the '
            'official flat color (default) or the photo')
        parser.add_argument(
            '--array-dtype', choices=ARRAY_DTYPES, default='float32',
            help='precision of the saved .npy arrays (float16: half the '
            'size, about 3 significant digits)')
        parser.add_argument(
            '--vis-rounding', choices=('truncate', 'round'),
            default='truncate',
            help='8-bit colors of the drawings: truncate (official) or '
            'round to the nearest level')
        for flag, (option, choices, text) in self.postprocess_flags.items():
            parser.add_argument(flag, dest=option, choices=choices,
                                default=choices[0], help=text)

    def inferencer_kwargs(self, args: argparse.Namespace) -> dict:
        """Post-processing options and the mask source.

        Raises:
            ValueError: ``--seg-dir`` and ``--fg-seg`` together.
        """
        seg_dir = getattr(args, 'seg_dir', None)
        fg_seg = getattr(args, 'fg_seg', None)
        if seg_dir is not None and fg_seg is not None:
            raise ValueError('--seg-dir and --fg-seg both give the '
                             'foreground; use one of them.')
        if seg_dir is not None and not osp.isdir(seg_dir):
            raise NotADirectoryError(
                f'--seg-dir {seg_dir!r} is not a folder; give the folder of '
                'the masks (e.g. the output folder of tools/infer.py seg).')
        post = {option: getattr(args, option)
                for option, _, _ in self.postprocess_flags.values()
                if getattr(args, option, None) is not None}
        return dict(postprocess=post, seg_dir=seg_dir,
                    fg_seg=tuple(fg_seg) if fg_seg else None)

    def index_options(self, args: argparse.Namespace) -> dict:
        """Non-default post-processing, mask and output options, so that one
        output folder never mixes two settings."""
        options = {}
        for option, choices, _ in self.postprocess_flags.values():
            value = getattr(args, option, choices[0])
            if value != choices[0]:
                options[option] = value
        for key, default in (('array_dtype', 'float32'),
                             ('background', 'color'),
                             ('vis_rounding', 'truncate')):
            value = getattr(args, key, default)
            if value != default:
                options[key] = value
        if getattr(args, 'seg_dir', None):
            options['seg_dir'] = osp.abspath(args.seg_dir)
        if getattr(args, 'fg_seg', None):
            options['fg_seg'] = [osp.abspath(p) for p in args.fg_seg]
        return {'dense_options': options} if options else {}

    def run_report(self, inferencer) -> List[str]:
        source = getattr(inferencer, 'foreground', None)
        return source.report() if source is not None else []

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
        """``[image | prediction]`` (the official demos' layout), the
        background outside the foreground mask (if any) per
        ``--background``."""
        from ...visualization import draw_dense_prediction
        return draw_dense_prediction(
            frame.image, dict(pred_normal=result.normal,
                              pred_depth=result.depth,
                              pred_albedo=result.albedo),
            foreground=result.foreground,
            background=getattr(args, 'background', 'color'),
            rounding=getattr(args, 'vis_rounding', 'truncate'))


def frame_entry(frame, result) -> dict:
    """The index fields every dense frame records (``foreground``: where its
    mask came from, when masks were asked for)."""
    entry = dict(image_name=frame.name, image_size=list(result.image_size))
    if frame.video is not None:
        entry.update(video=osp.basename(frame.video),
                     frame_index=frame.frame_index)
    if getattr(result, 'foreground_source', None) is not None:
        entry['foreground'] = result.foreground_source
    return entry


class DenseWriter(TaskWriter):
    """What the dense writers share: arrays at ``--array-dtype``, color
    images with the mask's background, and ``<stem>_fg.png`` (0 / 255) for
    masks from ``--fg-seg``."""

    def array(self, frame, suffix: str, array: np.ndarray) -> str:
        """Save ``array`` as ``<stem><suffix>`` at the chosen precision."""
        dtype = getattr(self.args, 'array_dtype', 'float32')
        return save_array(self.layout.frame_path(frame, suffix),
                          array.astype(dtype, copy=False))

    def colors(self, frame, result, suffix: str, name: str, value,
                bounds=None) -> str:
        """Write the color image of field ``name`` as ``<stem><suffix>``."""
        from ...visualization import color_dense_field
        image = color_dense_field(
            name, value, frame.image, result.foreground,
            getattr(self.args, 'background', 'color'),
            getattr(self.args, 'vis_rounding', 'truncate'), bounds)
        return write_image(self.layout.frame_path(frame, suffix), image)

    def mask_outputs(self, frame, result) -> List[str]:
        """``<stem>_fg.png`` when the mask came from the seg model."""
        if result.foreground_source != 'fg_seg':
            return []
        mask = result.foreground.astype(np.uint8) * 255
        return [write_image(self.layout.frame_path(frame, '_fg.png'), mask)]
