"""Body-part segmentation at the original resolution (official seg demo)."""
from typing import Tuple

import cv2
from mmengine.dataset import pseudo_collate

from ..codecs.label_resize import resize_argmax
from ..models.estimators import merge_flip_views
from ..utils.user_errors import ConfigError
from .base_inferencer import BaseInferencer
from .inputs import Frame
from .results import SegResult


class SegInferencer(BaseInferencer):
    """Label map per frame: resize to the network size, forward, logits
    resized back to the frame size (bilinear), argmax.

    ``prepare`` resizes and packs the frame (and its mirror with
    ``flip_test``); ``forward`` returns the logits of the segmentor's
    ``inference`` at the network input size (mmseg ``EncoderDecoder``) with
    the preprocessor's padding cropped; ``finish`` merges the mirrored
    logits (:func:`~sapiens2_mm.models.estimators.merge_flip_views`:
    mirrored back, the left/right channels of
    ``dataset_meta['flip_swap_pairs']`` exchanged, averaged before the resize;
    bilinear resizing is linear and mirror-symmetric, so the order does not
    change the result), then resizes to the frame size and takes the argmax
    in bands of rows (:func:`~sapiens2_mm.codecs.label_resize.resize_argmax`),
    so a large photo never holds full-resolution logits: the labels are those
    of mmseg's ``postprocess_result`` + argmax, with bounded memory, as
    uint8.

    Args: see :class:`BaseInferencer`.
    """
    task = 'seg'

    def __init__(self, model, *args, **kwargs) -> None:
        super().__init__(model, *args, **kwargs)
        self.swap_pairs = self.model.dataset_meta.get('flip_swap_pairs')
        if self.flip_test and self.swap_pairs is None:
            raise ConfigError(
                'flip_test needs dataset_meta["flip_swap_pairs"] (left/right '
                'class pairs); add them to the test dataset metainfo.')

    def prepare(self, frame: Frame) -> Tuple[None, list]:
        items = [self.pack(frame)]
        if self.flip_test:
            items.append(self.pack(frame, cv2.flip(frame.image, 1)))
        return None, items

    def forward(self, items: list) -> list:
        """(C, h, w) float logits per item at the network size, un-padded."""
        data = self.model.data_preprocessor(pseudo_collate(items), False)
        metas = [s.metainfo for s in data['data_samples']]
        # inference() reads only img_shape (equal in a batch: the network
        # size); one ori_shape for all avoids its "different shapes" warning.
        same = [dict(m, ori_shape=metas[0]['ori_shape']) for m in metas]
        out = []
        for lg, meta in zip(self.model.inference(data['inputs'], same), metas):
            left, right, top, bottom = meta.get(
                'img_padding_size', meta.get('padding_size', [0] * 4))
            out.append(lg[:, top:lg.shape[1] - bottom,
                          left:lg.shape[2] - right].float().cpu())
        return out

    def finish(self, frame: Frame, context, outputs: list) -> SegResult:
        logits = outputs[0]
        if self.flip_test:  # the mirror's logits mirrored back first
            logits = merge_flip_views(
                [(logits, False), (outputs[1].flip(-1), True)],
                self.swap_pairs)
        head = getattr(self.model, 'decode_head', None)
        align = bool(getattr(self.model, 'align_corners', False))
        threshold = getattr(head, 'threshold', None) or 0.3
        return SegResult(
            name=frame.name,
            label_map=resize_argmax(logits, frame.image.shape[:2], align,
                                    threshold),
            video=frame.video, frame_index=frame.frame_index)
