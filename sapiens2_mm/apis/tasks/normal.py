"""The normal task: per-pixel unit surface normals (camera frame)."""
from typing import List

from ...registry import TASKS
from ..dense_inferencer import DenseInferencer
from ..writers import TaskWriter, save_array, write_image
from .dense import DenseTask, frame_entry


class NormalInferencer(DenseInferencer):
    """Unit normals (H, W, 3) per frame (:class:`DenseInferencer`)."""
    task = 'normal'


class NormalWriter(TaskWriter):
    """``<stem>_normal.npy`` (H, W, 3) float32 unit normals and
    ``<stem>_normal.png``, the normals coloured ``(n + 1) / 2 * 255``."""

    def write(self, frame, result) -> dict:
        from ...visualization import normal_to_bgr
        npy = save_array(self.layout.frame_path(frame, '_normal.npy'),
                         result.normal)
        png = write_image(self.layout.frame_path(frame, '_normal.png'),
                          normal_to_bgr(result.normal))
        rel = [self.layout.relative(p) for p in (npy, png)]
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
    checkpoint_marker = 'conv_normal.weight'
    head_types = ('NormalHead', )

    def open_writer(self, layout, model, args) -> NormalWriter:
        return NormalWriter(layout, model.dataset_meta, args)
