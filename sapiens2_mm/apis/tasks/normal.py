"""The normal task: per-pixel unit surface normals (camera frame)."""
from typing import List

from ...registry import TASKS
from ..dense_inferencer import DenseInferencer
from .dense import DenseTask, DenseWriter, frame_entry


class NormalInferencer(DenseInferencer):
    """Unit normals (H, W, 3) per frame (:class:`DenseInferencer`)."""
    task = 'normal'


class NormalWriter(DenseWriter):
    """``<stem>_normal.npy`` (H, W, 3) unit normals (float32, or float16
    with ``--array-dtype``; unmasked) and ``<stem>_normal.png``, the normals
    colored ``(n + 1) / 2 * 255`` (background black with a mask)."""

    def write(self, frame, result) -> dict:
        paths = [self.array(frame, '_normal.npy', result.normal),
                 self.colors(frame, result, '_normal.png', 'pred_normal',
                              result.normal)]
        paths += self.mask_outputs(frame, result)
        rel = [self.layout.relative(p) for p in paths]
        return dict(outputs=rel, normal=rel[0],
                    frame=frame_entry(frame, result))

    def finalize(self, records: List[dict]) -> List[str]:
        count = sum('normal' in r for r in records)
        return [f'normals: {count} x <stem>_normal.npy (H, W, 3 float32 unit '
                'vectors, camera frame) + <stem>_normal.png']


@TASKS.register_module(name='normal')
class NormalTask(DenseTask):
    """Surface normals with the Sapiens2 NormalHead."""
    summary = 'surface normals (unit vectors per pixel, camera frame)'
    inferencer = NormalInferencer
    head_types = ('NormalHead', )
    drawn_field = 'pred_normal'
    postprocess_flags = {'--normalize': (
        'normalize', ('before_resize', 'after_resize'),
        'when normals are made unit length: before_resize (official: at '
        'network resolution, then cropped and resized, not re-normalized) '
        'or after_resize (every output pixel exactly unit length)')}

    def open_writer(self, layout, model, args) -> NormalWriter:
        return NormalWriter(layout, model.dataset_meta, args)
