"""The pointmap task: metric camera-frame points, depth and focal length."""
import argparse
import json
import os.path as osp
from typing import List

from ...registry import TASKS
from ..dense_inferencer import DenseInferencer
from ..ply import pointmap_to_cloud, write_ply
from ..writers import TaskWriter, save_array, write_image, write_text
from .dense import DenseTask, frame_entry

CAMERAS_FILE = 'pointmap_cameras.json'


class PointmapInferencer(DenseInferencer):
    """Metric pointmap, depth, scale and focal length per frame
    (:class:`DenseInferencer`)."""
    task = 'pointmap'


class PointmapWriter(TaskWriter):
    """Per frame: ``<stem>_pointmap.npy`` (H, W, 3) float32 metres,
    ``<stem>_depth.npy`` (H, W) float32 metres, ``<stem>_depth.png`` (turbo
    colours of the inverse depth between the frame's near/far bounds) and
    ``<stem>.ply`` (binary coloured point cloud). At the end
    ``pointmap_cameras.json`` lists every frame's focal length, scale and
    depth bounds (rebuilt from the index, so resumed runs are complete)."""

    def write(self, frame, result) -> dict:
        from ...visualization import depth_range, depth_to_bgr
        layout = self.layout
        bounds = depth_range(result.depth)
        paths = [
            save_array(layout.frame_path(frame, '_pointmap.npy'),
                       result.pointmap),
            save_array(layout.frame_path(frame, '_depth.npy'), result.depth),
            write_image(layout.frame_path(frame, '_depth.png'),
                        depth_to_bgr(result.depth, bounds)),
        ]
        points, colours = pointmap_to_cloud(result.pointmap, frame.image,
                                            getattr(self.args, 'ply_step', 1))
        paths.append(write_ply(layout.frame_path(frame, '.ply'), points,
                               colours))
        entry = frame_entry(frame, result)
        entry.update(focal_length_px=result.focal_length,
                     canonical_scale=result.scale,
                     depth_range_m=None if bounds is None else list(bounds),
                     num_points=int(len(points)))
        rel = [layout.relative(p) for p in paths]
        return dict(outputs=rel, pointmap=rel[0], frame=entry)

    def finalize(self, records: List[dict]) -> List[str]:
        frames = [r['frame'] for r in records if 'pointmap' in r]
        data = dict(
            canonical_focal_length=768.0,
            units='metres; focal lengths in pixels of the input image',
            depth_range='1st/99th percentile of the valid depth, clamped to '
            '[0.1, 250] m (the bounds of <stem>_depth.png)',
            frames=frames)
        path = osp.join(self.layout.out_dir, CAMERAS_FILE)
        write_text(path, json.dumps(data, indent=1))
        return [f'pointmaps: {len(frames)} x <stem>_pointmap.npy / '
                '_depth.npy / _depth.png / .ply',
                f'focal lengths: {path}']


@TASKS.register_module(name='pointmap')
class PointmapTask(DenseTask):
    """Metric pointmaps (+ canonical scale) with the Sapiens2 PointmapHead."""
    summary = 'metric pointmap, depth, point cloud and focal length'
    inferencer = PointmapInferencer
    checkpoint_marker = 'conv_pointmap.weight'
    head_types = ('PointmapHead', )

    def add_cli_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('--ply-step', type=int, default=1,
                            help='keep every N-th row and column in the '
                            '.ply point cloud (default 1: every pixel)')

    def inferencer_kwargs(self, args: argparse.Namespace) -> dict:
        if args.ply_step < 1:
            raise ValueError(f'--ply-step must be >= 1, got {args.ply_step}.')
        return {}

    def open_writer(self, layout, model, args) -> PointmapWriter:
        return PointmapWriter(layout, model.dataset_meta, args)
