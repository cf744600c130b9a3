"""Dense predictions (normals, pointmap + scale, albedo, ...) at the original size.

The same steps, in the same order, as the official dense demos: letterbox
the frame to the network size (the config's test pipeline,
``DenseResizePad``), forward, then the task's post-processing (normals made
unit length, metric pointmap = canonical / scale, albedo clamped to [0, 1]),
remove the letterbox padding and resize back to the frame size (the
pointmap blurred first when the frame is larger), and the focal length
768 / (scale * r). The post-processing is the model head's own
(:meth:`DenseEstimator.postprocess_result`), so ``tools/test.py`` and the
inferencer produce the same maps; ``postprocess`` picks the head's other
orders (docs/dense.md).

Optional foreground masks (the official demos' ``--seg_dir``,
:mod:`~sapiens2_mm.apis.foreground`) are attached to each result; they only
affect drawings and point clouds, never the arrays.
"""
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.dataset import pseudo_collate

from ..structures import dense_outputs
from .base_inferencer import BaseInferencer
from .foreground import SegDirMasks, SegModelMasks
from .inputs import Frame
from .results import DenseResult


def foreground_source(seg_dir: Optional[str] = None, fg_seg=None,
                      device: str = 'cpu', batch_size: int = 4):
    """The mask source of ``seg_dir`` / ``fg_seg`` (at most one), or None.

    ``fg_seg``: a seg model (from :func:`init_model`), a ``SegInferencer``,
    or a ``(config, checkpoint)`` pair.
    """
    if seg_dir is not None and fg_seg is not None:
        raise ValueError('Give seg_dir (masks from a folder) or fg_seg (masks '
                         'from a seg model), not both.')
    if seg_dir is not None:
        return SegDirMasks(seg_dir)
    if fg_seg is None:
        return None
    from .seg_inferencer import SegInferencer
    if isinstance(fg_seg, SegInferencer):
        return SegModelMasks(fg_seg)
    if isinstance(fg_seg, (tuple, list)):
        from .init_model import init_model
        config, checkpoint = fg_seg
        fg_seg = init_model(config, checkpoint, device)
    if getattr(fg_seg, 'task', None) != 'seg':
        raise ValueError(
            'fg_seg must be a seg model, a SegInferencer or a (seg config, '
            f'checkpoint) pair; got a {getattr(fg_seg, "task", None)!r} '
            'model.')
    return SegModelMasks(SegInferencer(fg_seg, batch_size=batch_size))


def _hwc(sample, name: str) -> Optional[np.ndarray]:
    """``sample.<name>`` (C, H, W) as a float32 (H, W, C) array, or None."""
    if name not in sample:
        return None
    data = getattr(sample, name).data.detach().float().cpu().numpy()
    return np.ascontiguousarray(data.transpose(1, 2, 0))


class DenseInferencer(BaseInferencer):
    """Run a :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Each dense task runs it under its own name (``task``; the registered
    task descriptions of :mod:`sapiens2_mm.apis.tasks` make the subclass);
    the result holds the maps the task declares
    (:mod:`sapiens2_mm.structures.dense_outputs`).

    With ``flip_test`` the mirrored frame is run too and the two raw outputs
    are merged by the head (mirror undone, x negated for normals and
    pointmaps, scales averaged), as ``test_cfg.flip_test`` does in
    ``tools/test.py``; ``None`` keeps the config's ``test_cfg.flip_test``.

    A frame whose post-processing fails (e.g. a pointmap scale <= 0 with the
    head's ``scale_guard='error'``), or whose mask is of another size, is
    skipped and listed in :attr:`failed` by :meth:`iter_frames`; the others
    go on.

    Args:
        postprocess: the head's post-processing options, e.g.
            ``{'normalize': 'after_resize'}`` (normal),
            ``{'resize_smoothing': 'none'}`` (pointmap),
            ``{'clamp': 'after_resize'}`` (albedo); default the official
            demos' order (see the heads).
        seg_dir: a folder of foreground masks (formats:
            :mod:`~sapiens2_mm.apis.foreground`); a frame without one uses
            the whole frame and is listed in :attr:`missing_masks`.
        fg_seg: instead, take the foreground from a seg model run on the
            same frames: a seg model, a ``SegInferencer`` or a ``(config,
            checkpoint)`` pair.
        Others: see :class:`BaseInferencer`.
    """

    def __init__(self, model, *args, postprocess: Optional[dict] = None,
                 seg_dir: Optional[str] = None,
                 fg_seg: Union[None, object, Tuple[str, str]] = None,
                 **kwargs) -> None:
        super().__init__(model, *args, **kwargs)
        if self.flip_test is None:
            self.flip_test = bool(
                (self.model.test_cfg or {}).get('flip_test', False))
        if postprocess:
            self.model.decode_head.set_postprocess(**postprocess)
        self.foreground = foreground_source(
            seg_dir, fg_seg, str(next(self.model.parameters()).device),
            self.batch_size)

    @property
    def missing_masks(self) -> List[str]:
        """Frames that had no mask in ``seg_dir`` (whole frame used)."""
        return list(getattr(self.foreground, 'missing', {}))

    def masks(self, frames: Sequence[Frame]) -> list:
        """One foreground mask (H, W) bool or None per frame."""
        if self.foreground is None:
            return [None] * len(frames)
        return self.foreground.masks(frames)

    def prepare(self, frame: Frame) -> Tuple[None, list]:
        return None, [(frame, self.pack(frame))]

    def forward(self, items: list) -> list:
        """Per item: (the head's outputs of that item, its data sample, its
        foreground mask). The masks of a seg model (``fg_seg``) are computed
        here, on the same batch of frames; a bad mask fails before the
        forward."""
        masks = self.masks([frame for frame, _ in items])
        model = self.model
        data = model.data_preprocessor(
            pseudo_collate([packed for _, packed in items]), False)
        inputs, samples = data['inputs'], data['data_samples']
        head = model.decode_head
        outputs = head.forward(model.extract_feat(inputs))
        if self.flip_test:
            flipped = head.forward(model.extract_feat(inputs.flip(-1)))
            outputs = head.merge_flipped(outputs, flipped)
        return [(_item_of(outputs, i), sample, mask)
                for i, (sample, mask) in enumerate(zip(samples, masks))]

    def finish(self, frame: Frame, context, outputs: list) -> DenseResult:
        """The head's post-processing (at the frame size) as a result."""
        head_outputs, sample, mask = outputs[0]
        sample = self.model.postprocess_result(head_outputs, [sample])[0]
        maps = {}
        for field in dense_outputs(self.task).fields:
            value = _hwc(sample, field.pred)
            if value is not None:
                maps[field.name] = value[..., 0] if field.channels == 1 \
                    else value
        scale = sample.metainfo.get('pred_scale')
        focal = sample.metainfo.get('pred_focal_length')
        source = getattr(self.foreground, 'source', None)
        return DenseResult(
            name=frame.name,
            image_size=tuple(frame.image.shape[:2]),
            maps=maps,
            scale=None if scale is None else float(scale),
            focal_length=None if focal is None else float(focal),
            video=frame.video,
            frame_index=frame.frame_index,
            foreground=mask,
            foreground_source=source if mask is not None else (
                None if source is None else 'missing'))


def _item_of(outputs, index: int):
    """Sample ``index`` of a head's batched outputs (a tensor or a tuple of
    tensors), batch dimension kept."""
    if isinstance(outputs, torch.Tensor):
        return outputs[index:index + 1]
    return type(outputs)(_item_of(o, index) for o in outputs)
