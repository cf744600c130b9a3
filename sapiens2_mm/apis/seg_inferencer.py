"""Body-part segmentation at the original resolution (docs/inference.md)."""
from typing import List, Optional

import cv2
import numpy as np
import torch

from .base_inferencer import BaseInferencer
from .inputs import Frame
from .results import SegResult
from .tasks import register_inferencer


@register_inferencer('seg')
class SegInferencer(BaseInferencer):
    """Label map per frame: resize to the network size, forward, logits
    resized back to the frame size (bilinear), argmax.

    With ``flip_test`` the mirrored frame is run too; mmseg's
    ``postprocess_result`` un-mirrors its logits, the left/right channels of
    ``dataset_meta['flip_swap_pairs']`` are exchanged (the same rule as
    :class:`~sapiens2_mm.models.estimators.SegFlipTTAModel`) and the
    two logit maps are averaged before the argmax.

    Args: see :class:`BaseInferencer`.
    """
    task = 'seg'

    def __init__(self, model, checkpoint: Optional[str] = None,
                 device: str = 'cpu', batch_size: int = 4,
                 flip_test: Optional[bool] = None) -> None:
        super().__init__(model, checkpoint, device, batch_size, flip_test)
        self.swap_pairs = self.model.dataset_meta.get('flip_swap_pairs')
        if self.flip_test and self.swap_pairs is None:
            raise ValueError(
                'flip_test needs dataset_meta["flip_swap_pairs"] (left/right '
                'class pairs); add them to the test dataset metainfo.')

    def _prepare(self, frame: Frame, flip: bool) -> dict:
        h, w = frame.image.shape[:2]
        image = cv2.flip(frame.image, 1) if flip else frame.image
        info = dict(img=image, img_path=frame.name, img_shape=(h, w),
                    ori_shape=(h, w))
        if flip:
            info.update(flip=True, flip_direction='horizontal')
        return self.pipeline(info)

    def _logits(self, frames: List[Frame], flip: bool) -> List[torch.Tensor]:
        samples = self._test_step([self._prepare(f, flip) for f in frames])
        return [s.seg_logits.data for s in samples]

    def run_batch(self, frames: List[Frame]) -> List[SegResult]:
        logits = self._logits(frames, flip=False)
        if self.flip_test:
            from ..models.estimators import swap_channels
            flipped = self._logits(frames, flip=True)
            logits = [(a + swap_channels(b, self.swap_pairs, dim=0)) / 2
                      for a, b in zip(logits, flipped)]
        return [
            SegResult(name=f.name,
                      label_map=lg.argmax(0).cpu().numpy().astype(np.int64),
                      video=f.video, frame_index=f.frame_index)
            for f, lg in zip(frames, logits)
        ]
