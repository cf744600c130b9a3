"""The pointmap task: metric camera-frame points, depth and focal length."""
import argparse
import json
import math
import os.path as osp
from dataclasses import dataclass
from typing import List, Union

from ...registry import TASKS
from ...utils.user_errors import OptionError
from ..ply import pointmap_to_cloud, write_ply
from ..writers import write_text
from .dense import DenseOptions, DenseTask, DenseWriter, frame_entry
from .options import option

CAMERAS_FILE = 'pointmap_cameras.json'


#: ``--ply-step auto`` keeps at most about this many points per cloud.
PLY_MAX_POINTS = 4_000_000


def auto_ply_step(height: int, width: int,
                  max_points: int = PLY_MAX_POINTS) -> int:
    """The smallest step s with ceil(H / s) * ceil(W / s) <= ``max_points``
    (1 up to 4 MP photos; an 8000x6000 photo gets 4: 3 M points)."""
    step = max(1, math.ceil(math.sqrt(height * width / max_points)))
    while math.ceil(height / step) * math.ceil(width / step) > max_points:
        step += 1
    return step


def ply_step(value, height: int, width: int) -> int:
    """``--ply-step`` (``'auto'`` or an int >= 1) for an H x W frame."""
    if value in (None, 'auto'):
        return auto_ply_step(height, width)
    return int(value)


def parse_ply_step(text: str):
    """argparse type of ``--ply-step``: ``auto`` or an integer >= 1."""
    if text == 'auto':
        return text
    try:
        step = int(text)
    except ValueError:
        step = 0
    if step < 1:
        raise argparse.ArgumentTypeError(
            f"must be 'auto' or an integer >= 1, got {text!r}")
    return step


def check_ply_step(value):
    """``value`` if it is ``'auto'`` or an int >= 1 (``run_inference``'s
    ``ply_step``, which argparse does not check), else a ValueError."""
    if value == 'auto' or (isinstance(value, int) and
                           not isinstance(value, bool) and value >= 1):
        return value
    raise OptionError(f"ply_step (--ply-step) must be 'auto' or an integer "
                     f'>= 1, got {value!r}.')


class PointmapWriter(DenseWriter):
    """Per frame the declared maps (:class:`DenseWriter`):
    ``<stem>_pointmap.npy`` (H, W, 3) metres, ``<stem>_depth.npy`` (H, W)
    metres and ``<stem>_depth.png`` (turbo colors of the inverse depth
    between the frame's near/far bounds, background grey 100 with a mask);
    then ``<stem>.ply`` (binary colored point cloud of the foreground, every
    ``--ply-step``-th row and column). At the end ``pointmap_cameras.json``
    lists every frame's focal length, scale and depth bounds (rebuilt from
    the index, so resumed runs are complete)."""

    def write(self, frame, result) -> dict:
        from ...visualization import depth_range
        layout = self.layout
        bounds = depth_range(result.depth, result.foreground)
        paths = self.map_outputs(frame, result, {'depth': bounds})
        step = ply_step(self.options.ply_step, *result.pointmap.shape[:2])
        points, colors = pointmap_to_cloud(result.pointmap, frame.image,
                                            step, result.foreground)
        paths.append(write_ply(layout.frame_path(frame, '.ply'), points,
                               colors))
        paths += self.mask_outputs(frame, result)
        entry = frame_entry(frame, result)
        entry.update(focal_length_px=result.focal_length,
                     canonical_scale=result.scale,
                     depth_range_m=None if bounds is None else list(bounds),
                     num_points=int(len(points)), ply_step=step)
        rel = [layout.relative(p) for p in paths]
        return dict(outputs=rel, pointmap=rel[0], frame=entry)

    def finalize(self, records: List[dict]) -> List[str]:
        frames = [r['frame'] for r in records if 'pointmap' in r]
        data = dict(
            canonical_focal_length=768.0,
            units='metres; focal lengths in pixels of the input image',
            depth_range='1st/99th percentile of the valid (foreground, with '
            'a mask) depth, clamped to [0.1, 250] m (the bounds of '
            '<stem>_depth.png)',
            frames=frames)
        path = osp.join(self.layout.out_dir, CAMERAS_FILE)
        write_text(path, json.dumps(data, indent=1))
        return [f'pointmaps: {len(frames)} x <stem>_pointmap.npy / '
                '_depth.npy / _depth.png / .ply',
                f'focal lengths: {path}']


@dataclass(frozen=True)
class PointmapOptions(DenseOptions):
    resize_smoothing: str = option(
        'official', 'before enlarging the pointmap to a larger photo: '
        'official (4 x 3x3 Gaussian blur, sigma 0.8) or none (bilinear '
        'resize only)', choices=('official', 'none'), head=True)
    ply_step: Union[str, int] = option(
        'auto', 'keep every N-th row and column in the .ply point cloud; '
        f'auto (default): 1 up to {PLY_MAX_POINTS // 1_000_000} M pixels, '
        'then the smallest step that keeps at most that many points (an '
        '8000x6000 photo: 4)', parse=parse_ply_step, check=check_ply_step)


@TASKS.register_module(name='pointmap')
class PointmapTask(DenseTask):
    """Metric pointmaps (+ canonical scale) with the Sapiens2 PointmapHead."""
    summary = 'metric pointmap, depth, point cloud and focal length'
    head_types = ('PointmapHead', )
    writer = PointmapWriter
    options_class = PointmapOptions

    def index_options(self, options: PointmapOptions) -> dict:
        """:meth:`DenseTask.index_options` and a ``--ply-step`` other than
        its default (the point clouds of one folder share one rule)."""
        recorded = super().index_options(options)
        if 'ply_step' in options.changed():
            recorded.setdefault('dense_options', {})['ply_step'] = \
                options.ply_step
        return recorded
