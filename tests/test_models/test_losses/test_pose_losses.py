"""The official pose loss and acc_pose are mmpose's KeypointMSELoss / PCK."""
import json

import torch
from mmpose.evaluation.functional import pose_pck_accuracy
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS


def _official(repo_path):
    root = repo_path('tests', 'data', 'official_losses')
    with open(f'{root}/loss_manifest.json') as f:
        manifest = json.load(f)['pose']
    return load_file(f'{root}/loss_pose.safetensors'), manifest


def test_mse_loss_and_acc_match_official(repo_path):
    data, manifest = _official(repo_path)
    cfg = dict(manifest['loss_decode'])
    cfg['type'] = 'mmpose.' + cfg['type']
    loss = MODELS.build(cfg)
    weights = data['keypoint_weights'].reshape(2, 308)
    value = loss(data['pred'], data['heatmaps'], weights)
    expected = manifest['losses']['loss_kpt']
    assert abs(value.item() - expected) <= 1e-5 * abs(expected)
    _, acc, _ = pose_pck_accuracy(data['pred'].numpy(),
                                  data['heatmaps'].numpy(),
                                  weights.numpy() > 0)
    assert abs(acc - manifest['losses']['acc_pose']) <= 1e-9


def test_head_loss_reproduces_official_value(repo_path):
    """The same numbers through PoseHeatmapHead.loss (prediction injected)."""
    from mmengine.structures import InstanceData, PixelData
    from mmpose.structures import PoseDataSample
    data, manifest = _official(repo_path)
    head = MODELS.build(dict(type='PoseHeatmapHead', in_channels=4,
                             out_channels=308, deconv_out_channels=(),
                             deconv_kernel_sizes=(), conv_out_channels=(),
                             conv_kernel_sizes=()))
    head.forward = lambda feats: data['pred']
    samples = []
    for i in range(2):
        s = PoseDataSample()
        s.gt_fields = PixelData(heatmaps=data['heatmaps'][i])
        s.gt_instance_labels = InstanceData(
            keypoint_weights=data['keypoint_weights'][i])
        samples.append(s)
    losses = head.loss(None, samples)
    for name, expected in manifest['losses'].items():
        assert abs(losses[name].item() - expected) <= 1e-5 * max(
            abs(expected), 1e-3), name


def test_ohkm_keeps_the_hardest_keypoints():
    loss = MODELS.build(dict(type='mmpose.KeypointOHKMMSELoss',
                             use_target_weight=True, topk=2, loss_weight=1.))
    pred = torch.zeros(1, 4, 2, 2)
    gt = torch.zeros(1, 4, 2, 2)
    gt[0, 0] = 1.0  # per-keypoint MSE: [1, 0, 4, 0.25]
    gt[0, 2] = 2.0
    gt[0, 3] = 0.5
    w = torch.ones(1, 4)
    # mean over the 2 largest per-keypoint MSEs: (4 + 1) / 2
    value = loss(pred, gt, w)
    torch.testing.assert_close(value, torch.tensor(2.5))
