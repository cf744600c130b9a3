"""Sapiens2 pose head: deconv + 1x1 convs + keypoint conv (official head)."""
from typing import Optional, Sequence, Tuple, Union

import torch
from mmengine.registry import DefaultScope
from mmengine.structures import PixelData
from mmpose.evaluation.functional import pose_pck_accuracy
from mmpose.models.heads.base_head import BaseHead
from mmpose.models.utils.tta import flip_heatmaps
from mmpose.registry import KEYPOINT_CODECS
from mmpose.utils.tensor_utils import to_numpy
from torch import Tensor, nn

from ....registry import MODELS
from ....utils.official_keys import OfficialLayout
from ...layers.conv_stacks import build_conv_stack, build_deconv_stack


@MODELS.register_module()
class PoseHeatmapHead(BaseHead):
    """Top-down heatmap head of Sapiens2 (an mmpose head).

    ``deconv_layers`` = [ConvTranspose2d(stride 2, no bias), InstanceNorm2d(no
    affine), SiLU] x n, ``conv_layers`` = [Conv2d, InstanceNorm2d, SiLU] x m,
    then ``conv_pose`` (1x1) to K heatmaps with no activation. Parameter names
    equal the official ``decode_head.*`` keys, so official weights load after the
    prefix rename ``decode_head.`` -> ``head.`` of
    :func:`sapiens2_mm.utils.official_to_package`.

    Sapiens2: Khirodkar et al., ICLR 2026.

    Args:
        in_channels: backbone channels C.
        out_channels: number of keypoints K (308, 17 or 133).
        deconv_out_channels: channels of each x2 deconv.
        deconv_kernel_sizes: kernel of each deconv (4, 3 or 2).
        conv_out_channels: channels of each conv after the deconvs.
        conv_kernel_sizes: kernel of each conv (odd).
        loss: loss config; the official one is
            ``dict(type='mmpose.KeypointMSELoss', use_target_weight=True,
            loss_weight=10.)``, the default.
        decoder: codec config used by :meth:`predict` (built from mmpose's
            ``KEYPOINT_CODECS``), e.g. ``dict(type='Sapiens2UDPHeatmap', ...)``.
        init_cfg: defaults to the official init (Kaiming-normal fan_out Conv2d,
            bias 0; transposed convs keep PyTorch's default).

    Shapes:
        input: tuple whose last element is (B, C, h, w);
        output: (B, K, h * 2^n, w * 2^n) for n deconvs.
    """
    # Official files hold this head under decode_head.; mmpose's
    # TopdownPoseEstimator holds it under head.
    official_layout = OfficialLayout('pose', 'conv_pose.weight',
                                     renames={'decode_head.': 'head.'})

    def __init__(self,
                 in_channels: int,
                 out_channels: int,
                 deconv_out_channels: Sequence[int] = (1024, 768),
                 deconv_kernel_sizes: Sequence[int] = (4, 4),
                 conv_out_channels: Sequence[int] = (512, 512, 256),
                 conv_kernel_sizes: Sequence[int] = (1, 1, 1),
                 loss: Optional[dict] = None,
                 decoder: Optional[dict] = None,
                 init_cfg: Optional[Union[dict, list]] = None):
        if loss is None:
            loss = dict(type='mmpose.KeypointMSELoss', use_target_weight=True,
                        loss_weight=10.)
        if init_cfg is None:
            init_cfg = [
                dict(type='Kaiming', layer='Conv2d', mode='fan_out',
                     nonlinearity='relu', distribution='normal', bias=0.)
            ]
        super().__init__(init_cfg)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.deconv_layers = build_deconv_stack(
            in_channels, deconv_out_channels, deconv_kernel_sizes)
        last = deconv_out_channels[-1] if deconv_out_channels else in_channels
        self.conv_layers = build_conv_stack(last, conv_out_channels,
                                             conv_kernel_sizes)
        last = conv_out_channels[-1] if conv_out_channels else last
        self.conv_pose = nn.Conv2d(last, out_channels, kernel_size=1)
        self.loss_module = MODELS.build(loss)
        self.decoder = None
        if decoder:
            # mmpose's codec registry has no parent, so build it in its own
            # scope (our codecs are registered there too).
            with DefaultScope.overwrite_default_scope('mmpose'):
                self.decoder = KEYPOINT_CODECS.build(decoder)

    def forward(self, feats: Union[Tuple[Tensor], Tensor]) -> Tensor:
        """Heatmap logits (B, K, H, W) from the last feature map."""
        x = feats[-1] if isinstance(feats, (tuple, list)) else feats
        return self.conv_pose(self.conv_layers(self.deconv_layers(x)))

    def predict_heatmaps(self, feats, batch_data_samples,
                         test_cfg: Optional[dict] = None) -> Tensor:
        """(B, K, H, W) heatmaps before decoding, flip-averaged with
        ``test_cfg['flip_test']`` (see :meth:`predict`)."""
        test_cfg = test_cfg or {}
        if test_cfg.get('flip_test', False):
            if not (isinstance(feats, list) and len(feats) == 2):
                raise ValueError(
                    'flip_test expects [feats, flipped_feats] from '
                    'TopdownPoseEstimator; got a single set of features.')
            flip_indices = batch_data_samples[0].metainfo.get('flip_indices')
            if flip_indices is None or len(flip_indices) != self.out_channels:
                raise ValueError(
                    f'flip_test needs flip_indices of length {self.out_channels} '
                    'in the data samples\' metainfo (set by the dataset\'s '
                    f'metainfo); got {flip_indices!r}.')
            heatmaps = self.forward(feats[0])
            flipped = flip_heatmaps(
                self.forward(feats[1]), flip_mode='heatmap',
                flip_indices=flip_indices,
                shift_heatmap=test_cfg.get('shift_heatmap', False))
            return (heatmaps + flipped) * 0.5
        return self.forward(feats)

    def predict(self, feats, batch_data_samples,
                test_cfg: Optional[dict] = None):
        """Decode keypoints in crop pixels, with optional flip test.

        With ``test_cfg['flip_test']`` the estimator passes ``[feats,
        feats_of_flipped_input]``; the flipped heatmaps are mirrored back,
        channels permuted by the samples' ``flip_indices`` and averaged, with no
        shift (UDP), as the official code does.
        """
        test_cfg = test_cfg or {}
        heatmaps = self.predict_heatmaps(feats, batch_data_samples, test_cfg)
        preds = self.decode(heatmaps)
        if test_cfg.get('output_heatmaps', False):
            return preds, [PixelData(heatmaps=hm) for hm in heatmaps.detach()]
        return preds

    def loss(self, feats, batch_data_samples,
             train_cfg: Optional[dict] = None) -> dict:
        """``loss_kpt`` (weighted MSE) and ``acc_pose`` (PCK@0.05 on argmax)."""
        train_cfg = train_cfg or {}
        pred = self.forward(feats)
        gt = torch.stack([d.gt_fields.heatmaps for d in batch_data_samples])
        weights = torch.cat([
            d.gt_instance_labels.keypoint_weights for d in batch_data_samples
        ])
        # The official head casts the prediction to the target dtype (fp32).
        pred = pred.to(gt.dtype)
        losses = dict(loss_kpt=self.loss_module(pred, gt, weights))
        if train_cfg.get('compute_acc', True):
            _, acc, _ = pose_pck_accuracy(
                output=to_numpy(pred), target=to_numpy(gt),
                mask=to_numpy(weights) > 0)
            losses['acc_pose'] = torch.tensor(acc, device=gt.device)
        return losses
