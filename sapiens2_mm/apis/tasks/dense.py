"""The dense tasks: a DenseEstimator config recognised by its head.

A dense task is its declaration of maps (what it predicts, file suffixes,
coloring, flip rule: :mod:`sapiens2_mm.structures.dense_outputs`) and one
:class:`DenseTask` registration here with its head types and
post-processing options (the head declares the official key layout); the
inferencer, the writer (``<stem>_<map>.npy``
and ``.png``) and the drawing come from the declaration. Normal and albedo
need nothing more and are registered below; pointmap adds its point cloud
and cameras file (``pointmap.py``). Official dense checkpoints keep their
``decode_head.`` prefix: the estimator calls its head ``decode_head`` too, so
no key is renamed.
"""
import os.path as osp
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, List, Optional, Sequence, Type

import numpy as np
from mmengine.config import Config

from ...registry import TASKS
from ...structures import DenseOutputs, dense_outputs
from ...utils.setup_env import qualified_type
from ...utils.user_errors import OptionError
from ..dense_inferencer import DenseInferencer
from ..mask_sources import check_foreground_options
from ..writers import TaskWriter, save_array, write_image
from .base import BaseTask, visualization_hooks
from .options import TaskOptions, option

DENSE_MODEL_TYPES = ('DenseEstimator', )
DENSE_SHOW_HOOK = 'DenseVisualizationHook'


ARRAY_DTYPES = ('float32', 'float16')


@lru_cache(maxsize=None)
def dense_inferencer(task: str) -> Type[DenseInferencer]:
    """The :class:`DenseInferencer` of ``task`` (``NormalInferencer`` ...)."""
    name = ''.join(part.capitalize() for part in task.split('_'))
    return type(f'{name}Inferencer', (DenseInferencer, ), dict(
        task=task, __module__=DenseInferencer.__module__,
        __doc__=f'The {task} maps per frame (:class:`DenseInferencer`).'))


FOREGROUND = 'foreground masks (drawings and point clouds; arrays unmasked)'


@dataclass(frozen=True)
class DenseOptions(TaskOptions):
    """Options of every dense task: foreground masks, background, array
    precision and color rounding (docs/inference.md); a task adds its head's
    post-processing options (``head=True``, the first choice the official
    demos' order)."""
    seg_dir: Optional[str] = option(
        None, 'folder of masks, per photo <stem>.npy (boolean), '
        '<stem>_seg.npy (seg class labels, 0 = background), or an image '
        '(the photo\'s file name, <stem>.png, <stem>_fg.png; palette '
        'index > 0, else any color channel > 0); a photo without one '
        'uses the whole frame', metavar='DIR', group=FOREGROUND)
    fg_seg: Optional[Sequence[str]] = option(
        None, 'take the foreground from this seg model in the same pass '
        '(labels > 0), written as <stem>_fg.png', nargs=2,
        metavar=('SEG_CONFIG', 'SEG_CHECKPOINT'), group=FOREGROUND)
    background: str = option(
        'color', 'what the drawings show outside the foreground: the '
        'official flat color (default) or the photo',
        choices=('color', 'photo'), group=FOREGROUND)
    array_dtype: str = option(
        'float32', 'precision of the saved .npy arrays (float16: half the '
        'size, about 3 significant digits)', choices=ARRAY_DTYPES)
    vis_rounding: str = option(
        'truncate', '8-bit colors of the drawings: truncate (official) or '
        'round to the nearest level', choices=('truncate', 'round'))

    def check(self) -> None:
        """Each option's values, and at most one mask source (``seg_dir`` a
        folder)."""
        super().check()
        check_foreground_options(self.seg_dir, self.fg_seg)


class DenseTask(BaseTask):
    """A dense task on :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Class attributes (besides :class:`BaseTask`'s):
        head_types: ``decode_head.type`` values that make a config this task.
        options_class: :class:`DenseOptions` or a subclass adding the head's
            post-processing options.
        writer: a :class:`DenseWriter` subclass for outputs beyond the
            declared maps (default :class:`DenseWriter`).
    """
    head_types: Sequence[str] = ()
    options_class: Type[DenseOptions] = DenseOptions
    writer: Optional[type] = None

    @property
    def outputs(self) -> DenseOutputs:
        """The task's declared maps."""
        return dense_outputs(self.name)

    @property
    def inferencer(self) -> Type[DenseInferencer]:
        return dense_inferencer(self.name)

    def open_writer(self, layout, model,
                    options: DenseOptions) -> 'DenseWriter':
        writer = self.writer or DenseWriter
        return writer(layout, model.dataset_meta, options, self.outputs)

    def build_inferencer(self, model, load_model: Optional[Callable] = None,
                         **kwargs) -> DenseInferencer:
        """:meth:`BaseTask.build_inferencer`; a ``fg_seg`` given as a
        ``(config, checkpoint)`` pair is loaded with ``load_model`` on the
        model's device first (the seg model whose masks the dense inferencer
        computes in its own steps)."""
        fg_seg = kwargs.get('fg_seg')
        if isinstance(fg_seg, (tuple, list)) and kwargs.get('seg_dir') is None:
            if load_model is None:
                raise OptionError(
                    'fg_seg as a (config, checkpoint) pair needs load_model '
                    '(build_inferencer and run_inference pass init_model).')
            device = str(next(model.parameters()).device)
            kwargs['fg_seg'] = load_model(*fg_seg, device=device)
        return super().build_inferencer(model, **kwargs)

    # -- tools/infer.py options ---------------------------------------------
    def inferencer_kwargs(self, options: DenseOptions,
                          device: str = 'cpu') -> dict:
        """The head's post-processing options and the mask source."""
        post = {name: getattr(options, name)
                for name in options.head_options()}
        return dict(postprocess=post, seg_dir=options.seg_dir,
                    fg_seg=tuple(options.fg_seg) if options.fg_seg else None)

    def index_options(self, options: DenseOptions) -> dict:
        """Non-default post-processing, output and mask options, so that one
        output folder never mixes two settings (the head's options first,
        then the output options by name, then the mask source)."""
        changed = options.changed()
        order = options.head_options() + ('array_dtype', 'background',
                                          'vis_rounding')
        recorded = {name: changed[name] for name in order if name in changed}
        if options.seg_dir:
            recorded['seg_dir'] = osp.abspath(options.seg_dir)
        if options.fg_seg:
            recorded['fg_seg'] = [osp.abspath(p) for p in options.fg_seg]
        return {'dense_options': recorded} if recorded else {}

    def run_report(self, inferencer) -> List[str]:
        source = inferencer.foreground
        return source.report() if source is not None else []

    def matches(self, cfg: Config) -> bool:
        model = cfg.model
        head = model.get('decode_head') or {}
        return (qualified_type(cfg, model.get('type')) in DENSE_MODEL_TYPES
                and qualified_type(cfg, head.get('type')) in self.head_types)

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
                  options: DenseOptions) -> Optional[np.ndarray]:
        """``[image | prediction]`` (the official demos' layout), the
        background outside the foreground mask (if any) per
        ``--background``."""
        from ...visualization import draw_dense_prediction
        return draw_dense_prediction(
            frame.image, {f'pred_{name}': value
                          for name, value in result.maps.items()},
            foreground=result.foreground,
            background=options.background, rounding=options.vis_rounding)


def frame_entry(frame, result) -> dict:
    """The index fields every dense frame records (``foreground``: where its
    mask came from, when masks were asked for)."""
    entry = dict(image_name=frame.name, image_size=list(result.image_size))
    if frame.video is not None:
        entry.update(video=osp.basename(frame.video),
                     frame_index=frame.frame_index)
    if result.foreground_source is not None:
        entry['foreground'] = result.foreground_source
    return entry


class DenseWriter(TaskWriter):
    """Per frame, for each declared map in order: ``<stem>_<map>.npy``
    (float32, or float16 with ``--array-dtype``; unmasked) and, for a map
    with a coloring, ``<stem>_<map>.png`` (the background of a mask per
    ``--background``); ``<stem>_fg.png`` (0 / 255) for masks from
    ``--fg-seg``.

    Args:
        outputs: the task's declared maps.
        Others: see :class:`TaskWriter`.
    """

    def __init__(self, layout, meta: dict, options: DenseOptions,
                 outputs: DenseOutputs) -> None:
        super().__init__(layout, meta, options)
        self.outputs = outputs

    def write(self, frame, result) -> dict:
        paths = self.map_outputs(frame, result)
        paths += self.mask_outputs(frame, result)
        rel = [self.layout.relative(p) for p in paths]
        return {'outputs': rel, self.outputs.task: rel[0],
                'frame': frame_entry(frame, result)}

    def map_outputs(self, frame, result, bounds=None) -> List[str]:
        """The array and color image of every declared map (``bounds``: map
        name -> value bounds of its colors, default from the foreground)."""
        paths = []
        for field in self.outputs.fields:
            value = result.maps[field.name]
            paths.append(self.array(frame, f'{field.suffix}.npy', value))
            if field.coloring is not None:
                paths.append(self.colors(
                    frame, result, f'{field.suffix}.png', field.pred, value,
                    (bounds or {}).get(field.name)))
        return paths

    def finalize(self, records: List[dict]) -> List[str]:
        outputs = self.outputs
        count = sum(outputs.task in r for r in records)
        dtype = self.options.array_dtype
        files = ' + '.join(
            f'<stem>{f.suffix}.npy'
            + (f' ({f.meaning.replace("float32", dtype)})' if f.meaning
               else '')
            + (f' + <stem>{f.suffix}.png' if f.coloring is not None else '')
            for f in outputs.fields)
        return [f'{outputs.label}: {count} x {files}']

    def array(self, frame, suffix: str, array: np.ndarray) -> str:
        """Save ``array`` as ``<stem><suffix>`` at the chosen precision."""
        return save_array(self.layout.frame_path(frame, suffix),
                          array.astype(self.options.array_dtype, copy=False))

    def colors(self, frame, result, suffix: str, name: str, value,
                bounds=None) -> str:
        """Write the color image of field ``name`` as ``<stem><suffix>``."""
        from ...visualization import color_dense_field
        image = color_dense_field(
            name, value, frame.image, result.foreground,
            self.options.background, self.options.vis_rounding, bounds)
        return write_image(self.layout.frame_path(frame, suffix), image)

    def mask_outputs(self, frame, result) -> List[str]:
        """``<stem>_fg.png`` when the mask came from the seg model."""
        if result.foreground_source != 'fg_seg':
            return []
        mask = result.foreground.astype(np.uint8) * 255
        return [write_image(self.layout.frame_path(frame, '_fg.png'), mask)]


@dataclass(frozen=True)
class NormalOptions(DenseOptions):
    normalize: str = option(
        'before_resize', 'when normals are made unit length: before_resize '
        '(official: at network resolution, then cropped and resized, not '
        're-normalized) or after_resize (every output pixel exactly unit '
        'length)', choices=('before_resize', 'after_resize'), head=True)


@dataclass(frozen=True)
class AlbedoOptions(DenseOptions):
    clamp: str = option(
        'before_resize', 'when albedo is clamped to [0, 1]: before_resize '
        '(official: at network resolution, then cropped and resized) or '
        'after_resize', choices=('before_resize', 'after_resize'), head=True)


@TASKS.register_module(name='normal')
class NormalTask(DenseTask):
    """Surface normals with the Sapiens2 NormalHead."""
    summary = 'surface normals (unit vectors per pixel, camera frame)'
    head_types = ('NormalHead', )
    options_class = NormalOptions


@TASKS.register_module(name='albedo')
class AlbedoTask(DenseTask):
    """Albedo with the Sapiens2 AlbedoHead."""
    summary = 'albedo (RGB reflectance in [0, 1] per pixel)'
    head_types = ('AlbedoHead', )
    options_class = AlbedoOptions
