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

Optional foreground masks (``--seg-dir``, ``--fg-seg``) come from a mask
source (:mod:`~sapiens2_mm.apis.mask_sources`) and are attached to each
result.
"""
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import torch
from mmengine.dataset import pseudo_collate

from ..structures import dense_outputs
from .base_inferencer import BaseInferencer
from .inputs import Frame
from .mask_sources import foreground_source
from .results import DenseResult


def check_letterbox_size(frame: Frame, input_size: Optional[Sequence[int]],
                         minimum: int = 2) -> None:
    """Refuse a photo too thin to letterbox: scaled by ``r = min(H / h,
    W / w)`` into the (H, W) network input it would be ``int(h r) x int(w
    r)`` pixels, and the post-processing (blur, resize back) needs at least
    ``minimum`` in each direction (a 1x500 photo is 0 or 1 pixel high).

    Raises:
        ValueError: naming the photo's and the letterboxed size.
    """
    if not input_size:
        return
    h, w = frame.image.shape[:2]
    net_h, net_w = input_size
    r = min(net_h / h, net_w / w)
    inner_h, inner_w = int(h * r), int(w * r)
    if min(inner_h, inner_w) < minimum:
        raise ValueError(
            f'the photo is {h}x{w} pixels; letterboxed into the {net_h}x'
            f'{net_w} network input it is {inner_h}x{inner_w}, thinner than '
            f'{minimum} pixels: an aspect ratio this extreme cannot be '
            'processed (crop the photo).')


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

    A mask source (:mod:`~sapiens2_mm.apis.mask_sources`) runs its three
    steps inside these: with ``fg_seg`` the seg model's crops are prepared in
    :meth:`prepare`, its network runs in :meth:`forward` on the same frames
    and its labels are resized in :meth:`finish`.

    Args:
        postprocess: the head's post-processing options, e.g.
            ``{'normalize': 'after_resize'}`` (normal),
            ``{'resize_smoothing': 'none'}`` (pointmap),
            ``{'clamp': 'after_resize'}`` (albedo); default the official
            demos' order (see the heads).
        seg_dir: a folder of foreground masks (formats:
            :mod:`~sapiens2_mm.apis.mask_sources`); a frame without one uses
            the whole frame and is listed in the end-of-run report.
        fg_seg: instead, take the foreground from a seg model run on the
            same frames: a seg model or a ``SegInferencer``
            (``build_inferencer`` also takes a ``(config, checkpoint)``
            pair).
        Others: see :class:`BaseInferencer`.
    """

    def __init__(self, model, *args, postprocess: Optional[dict] = None,
                 seg_dir: Optional[str] = None, fg_seg=None,
                 **kwargs) -> None:
        super().__init__(model, *args, **kwargs)
        if self.flip_test is None:
            self.flip_test = bool(
                (self.model.test_cfg or {}).get('flip_test', False))
        if postprocess:
            self.model.decode_head.set_postprocess(**postprocess)
        self.foreground = foreground_source(seg_dir, fg_seg, self.batch_size)

    def prepare(self, frame: Frame) -> Tuple[Any, list]:
        """The letterboxed frame; the mask source's own preparation is the
        context (for :meth:`finish`) and rides with the item (for
        :meth:`forward`)."""
        check_letterbox_size(frame, self.model.dataset_meta.get('input_size'))
        mask_context = None if self.foreground is None else \
            self.foreground.prepare(frame)
        return mask_context, [(frame, self.pack(frame), mask_context)]

    def forward(self, items: list) -> list:
        """Per item: (the head's outputs of that item, its data sample, the
        mask source's forward output). The mask source runs first, on the
        same frames (a bad mask fails before the network)."""
        masks = [None] * len(items) if self.foreground is None else \
            self.foreground.forward([frame for frame, _, _ in items],
                                    [context for _, _, context in items])
        model = self.model
        data = model.data_preprocessor(
            pseudo_collate([packed for _, packed, _ in items]), False)
        inputs, samples = data['inputs'], data['data_samples']
        head = model.decode_head
        outputs = head.forward(model.extract_feat(inputs))
        if self.flip_test:
            flipped = head.forward(model.extract_feat(inputs.flip(-1)))
            outputs = head.merge_flipped(outputs, flipped)
        return [(_item_of(outputs, i), sample, mask)
                for i, (sample, mask) in enumerate(zip(samples, masks))]

    def finish(self, frame: Frame, context, outputs: list) -> DenseResult:
        """The head's post-processing (at the frame size) and the mask
        source's finish, as a result."""
        head_outputs, sample, forwarded = outputs[0]
        mask = None if self.foreground is None else \
            self.foreground.finish(frame, context, forwarded)
        sample = self.model.postprocess_result(head_outputs, [sample])[0]
        maps = {}
        for field in dense_outputs(self.task).fields:
            value = _hwc(sample, field.pred)
            if value is not None:
                maps[field.name] = field.as_map(value)
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
