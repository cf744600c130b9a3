"""The albedo task: per-pixel RGB albedo in [0, 1]."""
from typing import List

from ...registry import TASKS
from ..dense_inferencer import DenseInferencer
from ..writers import TaskWriter, save_array, write_image
from .dense import DenseTask, frame_entry


class AlbedoInferencer(DenseInferencer):
    """Albedo (H, W, 3) RGB in [0, 1] per frame (:class:`DenseInferencer`)."""
    task = 'albedo'


class AlbedoWriter(TaskWriter):
    """``<stem>_albedo.npy`` (H, W, 3) float32 RGB in [0, 1] (the clamped
    prediction) and ``<stem>_albedo.png`` (8-bit, ``round(255 a)``)."""

    def write(self, frame, result) -> dict:
        from ...visualization import albedo_to_bgr
        npy = save_array(self.layout.frame_path(frame, '_albedo.npy'),
                         result.albedo)
        png = write_image(self.layout.frame_path(frame, '_albedo.png'),
                          albedo_to_bgr(result.albedo))
        rel = [self.layout.relative(p) for p in (npy, png)]
        return dict(outputs=rel, albedo=rel[0],
                    frame=frame_entry(frame, result))

    def finalize(self, records: List[dict]) -> List[str]:
        count = sum('albedo' in r for r in records)
        return [f'albedo: {count} x <stem>_albedo.npy (H, W, 3 float32 RGB '
                'in [0, 1]) + <stem>_albedo.png']


@TASKS.register_module(name='albedo')
class AlbedoTask(DenseTask):
    """Albedo with the Sapiens2 AlbedoHead."""
    summary = 'albedo (RGB reflectance in [0, 1] per pixel)'
    inferencer = AlbedoInferencer
    checkpoint_marker = 'conv_albedo.weight'
    head_types = ('AlbedoHead', )

    def open_writer(self, layout, model, args) -> AlbedoWriter:
        return AlbedoWriter(layout, model.dataset_meta, args)
