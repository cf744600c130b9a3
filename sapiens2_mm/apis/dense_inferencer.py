"""Dense predictions (normals, pointmap + scale, albedo) at the original size.

The same steps as the official dense demos: letterbox the frame to the
network size (the config's test pipeline, ``DenseResizePad``), forward,
remove the letterbox padding and resize back to the frame size, then the
task's post-processing (unit normals re-normalised after the resize; metric
pointmap = canonical / scale and the focal length 768 / (scale * r); albedo
clamped to [0, 1]). The post-processing is the model head's own
(:meth:`DenseEstimator.postprocess_result`), so ``tools/test.py`` and the
inferencer produce the same maps.
"""
from typing import List, Optional

import numpy as np
from mmengine.dataset import pseudo_collate

from .base_inferencer import BaseInferencer
from .dense_results import DenseResult
from .inputs import Frame


def _hwc(sample, name: str) -> Optional[np.ndarray]:
    """``sample.<name>`` (C, H, W) as a float32 (H, W, C) array, or None."""
    if name not in sample:
        return None
    data = getattr(sample, name).data.detach().float().cpu().numpy()
    return np.ascontiguousarray(data.transpose(1, 2, 0))


class DenseInferencer(BaseInferencer):
    """Run a :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Each task subclasses it with its ``task`` name (registered task
    descriptions in :mod:`sapiens2_mm.apis.tasks`).

    With ``flip_test`` the mirrored frame is run too and the two raw outputs
    are merged by the head (mirror undone, x negated for normals and
    pointmaps, scales averaged), as ``test_cfg.flip_test`` does in
    ``tools/test.py``; ``None`` keeps the config's ``test_cfg.flip_test``.

    A frame whose post-processing fails (e.g. a pointmap scale <= 0 with the
    head's ``scale_guard='error'``) is skipped and listed in :attr:`failed`
    by :meth:`iter_frames`; the others go on.

    Args: see :class:`BaseInferencer`.
    """

    def __init__(self, model, checkpoint: Optional[str] = None,
                 device: str = 'cpu', batch_size: int = 4,
                 flip_test: Optional[bool] = None) -> None:
        super().__init__(model, checkpoint, device, batch_size, flip_test)
        if self.flip_test is None:
            self.flip_test = bool(
                (self.model.test_cfg or {}).get('flip_test', False))

    def _prepare(self, frame: Frame) -> dict:
        h, w = frame.image.shape[:2]
        return self.pipeline(dict(img=frame.image, img_path=frame.name,
                                  img_shape=(h, w), ori_shape=(h, w)))

    def run_batch(self, frames: List[Frame]) -> List[DenseResult]:
        model = self.model
        data = model.data_preprocessor(
            pseudo_collate([self._prepare(f) for f in frames]), False)
        inputs, samples = data['inputs'], data['data_samples']
        head = model.decode_head
        outputs = head.forward(model.extract_feat(inputs))
        if self.flip_test:
            flipped = head.forward(model.extract_feat(inputs.flip(-1)))
            outputs = head.merge_flipped(outputs, flipped)
        samples = model.postprocess_result(outputs, samples)
        return [self._result(f, s) for f, s in zip(frames, samples)]

    @staticmethod
    def _result(frame: Frame, sample) -> DenseResult:
        depth = _hwc(sample, 'pred_depth')
        scale = sample.metainfo.get('pred_scale')
        focal = sample.metainfo.get('pred_focal_length')
        return DenseResult(
            name=frame.name,
            image_size=tuple(frame.image.shape[:2]),
            normal=_hwc(sample, 'pred_normal'),
            pointmap=_hwc(sample, 'pred_pointmap'),
            depth=None if depth is None else depth[..., 0],
            albedo=_hwc(sample, 'pred_albedo'),
            scale=None if scale is None else float(scale),
            focal_length=None if focal is None else float(focal),
            video=frame.video,
            frame_index=frame.frame_index)
