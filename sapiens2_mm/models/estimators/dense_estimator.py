"""Estimator of the dense tasks (normal, pointmap, albedo) on mmseg's pieces."""
from typing import List, Optional, Sequence

import torch
from mmengine.structures import PixelData
from mmseg.models.segmentors import DepthEstimator
from torch import Tensor

from ...registry import MODELS
from ...structures import DenseDataSample


@MODELS.register_module()
class DenseEstimator(DepthEstimator):
    """Backbone + dense head with the mmengine model interface.

    The official ``NormalEstimator`` / ``PointmapEstimator`` /
    ``AlbedoEstimator`` in one class: ``backbone.`` and ``decode_head.`` state
    dict prefixes (official task checkpoints load unchanged), no neck. From
    mmseg's ``DepthEstimator`` it keeps the construction, ``extract_feat``,
    ``loss`` (``decode_head.loss``; names get mmseg's ``decode.`` prefix) and
    ``_forward``; prediction is replaced because the heads return several maps
    and post-process them per task.

    Modes (``model(inputs, data_samples, mode=...)``):

    * ``'tensor'``: the official raw outputs, ``decode_head(backbone(x))``:
      normal / albedo (B, 3, H, W); pointmap ``(pointmap (B, 3, H, W),
      scale (B, 1))``.
    * ``'loss'``: ``{'decode.<loss_name>': value}`` against the GT of the
      :class:`DenseDataSample` list.
    * ``'predict'``: one DenseDataSample per image with the ``pred_*`` fields
      at the original image size (letterbox ``padding_size`` cropped, flips
      undone, bilinear resize to ``ori_shape``; see the head's
      ``postprocess_sample``).

    Args:
        backbone: backbone config (``Sapiens2``).
        decode_head: ``NormalHead`` / ``PointmapHead`` / ``AlbedoHead`` config.
        test_cfg: ``mode='whole'`` and ``flip_test`` (default False): also
            run the mirrored image and average (mirror undone, x negated for
            normals / pointmaps, scales averaged).
        data_preprocessor: e.g. ``mmengine.ImgDataPreprocessor`` with the
            official mean/std and ``bgr_to_rgb=True`` (it leaves the data
            samples, hence ``padding_size``, untouched).
        **kwargs: other ``DepthEstimator`` arguments (``train_cfg``,
            ``init_cfg``, ...).
    """

    def __init__(self, backbone: dict, decode_head: dict,
                 test_cfg: Optional[dict] = None, **kwargs):
        test_cfg = dict(mode='whole') if test_cfg is None else test_cfg
        if test_cfg.get('mode', 'whole') != 'whole':
            # Sliding windows would cut the pointmap scale branch's input and
            # mix canonical frames; the dense heads predict whole images.
            raise ValueError(
                f"DenseEstimator supports test_cfg mode 'whole' only, got "
                f"{test_cfg.get('mode')!r}; use flip_test=True for a flip "
                'test.')
        super().__init__(backbone=backbone, decode_head=decode_head,
                         test_cfg=test_cfg, **kwargs)

    def inference(self, inputs: Tensor, batch_img_metas: List[dict]):
        """Raw head outputs of the batch, with the flip test if configured."""
        outputs = self.decode_head.forward(self.extract_feat(inputs))
        if (self.test_cfg or {}).get('flip_test', False):
            flipped = self.decode_head.forward(
                self.extract_feat(inputs.flip(-1)))
            outputs = self.decode_head.merge_flipped(outputs, flipped)
        return outputs

    def predict(self, inputs: Tensor,
                data_samples: Optional[Sequence] = None) -> List:
        """Predictions at the original image size (see the class docstring).

        Args:
            inputs: (B, 3, H, W) normalized images.
            data_samples: their DenseDataSamples (metainfo ``ori_shape``,
                ``padding_size``, ``scale_factor``, ``flip`` ...), or None for
                predictions at the input size.

        Returns:
            The data samples (new DenseDataSamples when None was given) with
            ``pred_*`` PixelData fields and prediction metainfo.
        """
        if data_samples is None:
            shape = tuple(inputs.shape[2:])
            data_samples = [
                DenseDataSample(metainfo=dict(
                    ori_shape=shape, img_shape=shape,
                    padding_size=(0, 0, 0, 0)))
                for _ in range(inputs.shape[0])]
        metas = [sample.metainfo for sample in data_samples]
        outputs = self.inference(inputs, metas)
        return self.postprocess_result(outputs, data_samples)

    def postprocess_result(self, outputs, data_samples: Sequence) -> List:
        """Write the head's per-sample predictions into the data samples."""
        with torch.no_grad():
            results = self.decode_head.postprocess(
                outputs, [sample.metainfo for sample in data_samples])
        for sample, (fields, metainfo) in zip(data_samples, results):
            sample.set_data(
                {name: PixelData(data=value) for name, value in fields.items()})
            if metainfo:
                sample.set_metainfo(metainfo)
        return list(data_samples)
