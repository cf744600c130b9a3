"""Flip test of the dense tasks through mmengine's TTA pipeline route."""
from typing import List

import torch
import torch.nn.functional as F
from mmengine.model import BaseTTAModel
from mmengine.structures import PixelData

from ...registry import MODELS


def _mean(views: list, name: str) -> torch.Tensor:
    return torch.stack([getattr(v, name).data for v in views]).mean(0)


@MODELS.register_module()
class DenseFlipTTAModel(BaseTTAModel):
    """Merge the predictions of an image and its mirror (normal/pointmap/albedo).

    Each view's predictions come out of :class:`DenseEstimator` already at the
    original size, with the mirror undone and the x component of normals and
    pointmaps negated (its post-processing reads ``flip`` /
    ``flip_direction``). Here they are averaged: normals are re-normalized
    after averaging; pointmaps average the canonical maps (metric x scale) and
    the scales, so metric = mean canonical / mean scale and the focal length
    is rescaled with the scale; albedo averages the raw maps and clamps again.
    Use with a ``TestTimeAug`` pipeline whose flip transform has ``prob=0``
    and ``prob=1`` (the same shape as the seg flip test). For a flip test
    without a TTA pipeline set ``test_cfg.flip_test=True`` of the estimator.

    Args:
        module: the :class:`DenseEstimator` (or its config).
        data_preprocessor: optional preprocessor config.
    """

    def merge_preds(self, data_samples_list: List[list]) -> list:
        """One merged DenseDataSample per image from its list of views."""
        return [self._merge(views) for views in data_samples_list]

    @staticmethod
    def _merge(views: list):
        result = views[0].clone()
        first = views[0]
        if 'pred_normal' in first:
            result.pred_normal = PixelData(
                data=F.normalize(_mean(views, 'pred_normal'), dim=0, eps=1e-6))
        if 'pred_pointmap' in first:
            scales = [float(v.metainfo['pred_scale']) for v in views]
            scale = sum(scales) / len(scales)
            canonical = torch.stack([
                v.pred_pointmap.data * s for v, s in zip(views, scales)
            ]).mean(0)
            metric = canonical / scale
            result.pred_pointmap = PixelData(data=metric)
            result.pred_depth = PixelData(data=metric[2:3])
            focal = float(first.metainfo['pred_focal_length']) * scales[0]
            result.set_metainfo(dict(pred_scale=scale,
                                     pred_focal_length=focal / scale))
        if 'pred_albedo_raw' in first:
            raw = _mean(views, 'pred_albedo_raw')
            result.pred_albedo_raw = PixelData(data=raw)
            result.pred_albedo = PixelData(data=raw.clamp(0, 1))
        elif 'pred_albedo' in first:
            result.pred_albedo = PixelData(data=_mean(views, 'pred_albedo'))
        return result
