"""Body-part segmentation at the original resolution (official seg demo)."""
from typing import List, Optional

import cv2
import torch
from mmengine.dataset import pseudo_collate

from .base_inferencer import BaseInferencer
from .inputs import Frame
from .label_resize import resize_argmax
from .results import SegResult


class SegInferencer(BaseInferencer):
    """Label map per frame: resize to the network size, forward, logits
    resized back to the frame size (bilinear), argmax.

    The logits come from the segmentor's ``inference`` at the network input
    size (mmseg ``EncoderDecoder``); the padding of the preprocessor is cropped
    and the resize to the frame size and the argmax run in bands of rows
    (:func:`~sapiens2_mm.apis.label_resize.resize_argmax`), so a large photo
    never holds full-resolution logits: the labels are those of mmseg's
    ``postprocess_result`` + argmax, with bounded memory, as uint8.

    With ``flip_test`` the mirrored frame is run too; its logits are mirrored
    back, the left/right channels of ``dataset_meta['flip_swap_pairs']`` are
    exchanged (the same rule as
    :class:`~sapiens2_mm.models.estimators.SegFlipTTAModel`) and the two
    logit maps are averaged before the resize (bilinear resizing is linear
    and mirror-symmetric, so the order does not change the result).

    Args: see :class:`BaseInferencer`.
    """
    task = 'seg'

    def __init__(self, model, checkpoint: Optional[str] = None,
                 device: str = 'cpu', batch_size: int = 4,
                 flip_test: Optional[bool] = None, **speed) -> None:
        super().__init__(model, checkpoint, device, batch_size, flip_test,
                         **speed)
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
        return self.pipeline(info)

    def _logits(self, frames: List[Frame], flip: bool) -> List[torch.Tensor]:
        """(C, h, w) logits per frame at the network size, un-padded and
        un-mirrored."""
        data = self.model.data_preprocessor(
            pseudo_collate([self._prepare(f, flip) for f in frames]), False)
        metas = [s.metainfo for s in data['data_samples']]
        # inference() reads only img_shape (equal in a batch: the network
        # size); one ori_shape for all avoids its "different shapes" warning.
        same = [dict(m, ori_shape=metas[0]['ori_shape']) for m in metas]
        logits = self.model.inference(data['inputs'], same)
        out = []
        for lg, meta in zip(logits, metas):
            left, right, top, bottom = meta.get(
                'img_padding_size', meta.get('padding_size', [0] * 4))
            lg = lg[:, top:lg.shape[1] - bottom, left:lg.shape[2] - right]
            out.append(lg.flip(-1) if flip else lg)
        return out

    def run_batch(self, frames: List[Frame]) -> List[SegResult]:
        logits = self._logits(frames, flip=False)
        if self.flip_test:
            from ..models.estimators import swap_channels
            flipped = self._logits(frames, flip=True)
            logits = [(a + swap_channels(b, self.swap_pairs, dim=0)) / 2
                      for a, b in zip(logits, flipped)]
        head = getattr(self.model, 'decode_head', None)
        align = bool(getattr(self.model, 'align_corners', False))
        threshold = getattr(head, 'threshold', None) or 0.3
        return [
            SegResult(name=f.name,
                      label_map=resize_argmax(lg, f.image.shape[:2], align,
                                              threshold),
                      video=f.video, frame_index=f.frame_index)
            for f, lg in zip(frames, logits)
        ]
