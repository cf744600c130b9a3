"""Flip test for body-part segmentation: average logits, swap left/right."""
from typing import List, Optional, Sequence, Tuple

import torch
from mmengine.model import BaseTTAModel
from mmengine.structures import PixelData

from ...metainfo.seg29 import seg29_flip_swap_pairs
from ...registry import MODELS


def swap_channels(logits: torch.Tensor,
                  pairs: Sequence[Tuple[int, int]],
                  dim: int = 0) -> torch.Tensor:
    """Exchange the score channels of each (left, right) class pair.

    Args:
        logits: (..., K, ...) scores with classes along ``dim``.
        pairs: (a, b) class pairs to exchange.
        dim: class dimension.

    Returns:
        A new tensor with channels ``a`` and ``b`` exchanged for every pair.
    """
    order = list(range(logits.shape[dim]))
    for a, b in pairs:
        order[a], order[b] = b, a
    index = torch.as_tensor(order, device=logits.device)
    return logits.index_select(dim, index)


def merge_flip_views(views: Sequence[Tuple[torch.Tensor, bool]],
                     pairs: Sequence[Tuple[int, int]]) -> torch.Tensor:
    """The flip merge of body-part logits (the official flip test).

    Args:
        views: ``(logits, mirrored)`` per view of one image: (K, H, W) logits
            (those of a horizontally mirrored view already mirrored back),
            and whether the view was mirrored.
        pairs: left/right class pairs, exchanged in the mirrored views.

    Returns:
        (K, H, W) mean of the views' logits.
    """
    total = None
    for logits, mirrored in views:
        if mirrored:
            logits = swap_channels(logits, pairs, dim=0)
        total = logits if total is None else total + logits
    return total / len(views)


@MODELS.register_module()
class SegFlipTTAModel(BaseTTAModel):
    """Test-time augmentation that merges a flipped view with swapped labels.

    mmseg's segmentor already un-flips the logits of a flipped view
    (``postprocess_result`` reads ``flip``/``flip_direction``) and resizes
    them to the original size. mmseg's ``SegTTAModel`` then averages softmax
    probabilities without exchanging left/right classes, which is wrong for
    body parts; here the *logits* are averaged, with the channels of the
    ``swap_pairs`` exchanged for horizontally flipped views (official flip
    test). Use with a ``TestTimeAug`` pipeline holding a ``RandomFlip`` with
    ``prob=0.0`` and ``prob=1.0`` (see ``configs/seg``).

    Args:
        module: the segmentor (``mmseg.EncoderDecoder``) or its config.
        swap_pairs: left/right class pairs; default from seg29.json.
        data_preprocessor: optional preprocessor config.
    """

    def __init__(self, module, swap_pairs: Optional[Sequence] = None,
                 data_preprocessor: Optional[dict] = None) -> None:
        super().__init__(module, data_preprocessor)
        self.swap_pairs = [tuple(p) for p in (
            swap_pairs if swap_pairs is not None else seg29_flip_swap_pairs())]

    def merge_preds(self, data_samples_list: List[list]) -> list:
        """Average the views of each image.

        Args:
            data_samples_list: per image, the list of its augmented
                ``SegDataSample`` predictions (``seg_logits`` (K, H, W)).

        Returns:
            One ``SegDataSample`` per image with merged ``seg_logits`` and
            ``pred_sem_seg`` (1, H, W).
        """
        merged = []
        for views in data_samples_list:
            logits = merge_flip_views(
                [(view.seg_logits.data, bool(
                    view.metainfo.get('flip') and view.metainfo.get(
                        'flip_direction') == 'horizontal')) for view in views],
                self.swap_pairs)
            result = views[0].clone()
            result.set_data({
                'seg_logits': PixelData(data=logits),
                'pred_sem_seg': PixelData(data=logits.argmax(0, keepdim=True)),
            })
            merged.append(result)
        return merged
