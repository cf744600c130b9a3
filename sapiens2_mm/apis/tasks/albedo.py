"""The albedo task: per-pixel RGB albedo in [0, 1]."""
from typing import List

from ...registry import TASKS
from ..dense_inferencer import DenseInferencer
from .dense import DenseTask, DenseWriter, frame_entry


class AlbedoInferencer(DenseInferencer):
    """Albedo (H, W, 3) RGB in [0, 1] per frame (:class:`DenseInferencer`)."""
    task = 'albedo'


class AlbedoWriter(DenseWriter):
    """``<stem>_albedo.npy`` (H, W, 3) RGB in [0, 1] (the clamped
    prediction; float32, or float16 with ``--array-dtype``; unmasked) and
    ``<stem>_albedo.png`` (8-bit ``255 a``, truncated as the official demo;
    background grey 100 with a mask)."""

    def write(self, frame, result) -> dict:
        paths = [self.array(frame, '_albedo.npy', result.albedo),
                 self.colors(frame, result, '_albedo.png', 'pred_albedo',
                              result.albedo)]
        paths += self.mask_outputs(frame, result)
        rel = [self.layout.relative(p) for p in paths]
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
    head_types = ('AlbedoHead', )
    drawn_field = 'pred_albedo'
    postprocess_flags = {'--clamp': (
        'clamp', ('before_resize', 'after_resize'),
        'when albedo is clamped to [0, 1]: before_resize (official: at '
        'network resolution, then cropped and resized) or after_resize')}

    def open_writer(self, layout, model, args) -> AlbedoWriter:
        return AlbedoWriter(layout, model.dataset_meta, args)
