"""Seg losses: official vectors, direct small computations, mmseg differences."""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from sapiens2_mm.metainfo.seg29 import seg29_class_weight
from sapiens2_mm.registry import MODELS


@pytest.fixture(scope='module')
def official():
    from tests.conftest import DATA_DIR
    data = load_file(f'{DATA_DIR}/official_losses/loss_seg.safetensors')
    with open(f'{DATA_DIR}/official_losses/loss_manifest.json') as f:
        manifest = json.load(f)['seg']
    return data['pred'], data['gt_seg'][:, 0], manifest


def _ce(reduction='none', **kwargs):
    return MODELS.build(dict(type='mmseg.CrossEntropyLoss',
                             class_weight=seg29_class_weight(),
                             reduction=reduction, **kwargs))


def test_ce_matches_official(official):
    pred, gt, manifest = official
    assert manifest['loss_decode'][0]['class_weight'] == seg29_class_weight()
    value = _ce()(pred, gt, ignore_index=255).mean().item()
    assert value == pytest.approx(manifest['losses']['loss_ce'], rel=1e-6)


def test_dice_matches_official(official):
    pred, gt, manifest = official
    value = MODELS.build(dict(type='SegDiceLoss'))(pred, gt).item()
    assert value == pytest.approx(manifest['losses']['loss_dice'], rel=1e-6)


def test_ce_equals_direct_computation():
    """-w[y] log softmax(x)[y] per pixel, 0 where ignored, / all pixels."""
    torch.manual_seed(0)
    weight = [0.5, 2.0, 3.0]
    pred = torch.randn(2, 3, 4, 5)
    gt = torch.randint(0, 3, (2, 4, 5))
    gt[0, 0, :3] = 255
    ce = MODELS.build(dict(type='mmseg.CrossEntropyLoss', class_weight=weight,
                           reduction='none'))
    logp = pred.log_softmax(1).numpy()
    total = 0.0
    for b, i, j in np.ndindex(2, 4, 5):
        y = int(gt[b, i, j])
        if y != 255:
            total += -weight[y] * logp[b, y, i, j]
    expected = total / gt.numel()
    assert ce(pred, gt, ignore_index=255).mean().item() == pytest.approx(
        expected, rel=1e-6)


def test_mmseg_mean_reduction_differs_from_official():
    """Why the configs use reduction='none': mmseg's 'mean' with class weights
    divides by the summed weights of the labels, not by the pixel count."""
    torch.manual_seed(0)
    pred = torch.randn(1, 29, 6, 5)
    gt = torch.randint(0, 29, (1, 6, 5))
    official = _ce()(pred, gt, ignore_index=255).mean().item()
    mean = _ce('mean')(pred, gt, ignore_index=255).item()
    weights = torch.tensor(seg29_class_weight())[gt]
    assert mean == pytest.approx(official * gt.numel() / weights.sum().item(),
                                 rel=1e-5)
    assert abs(mean - official) > 1e-3


def _dice_by_hand(pred, gt, eps=1e-3):
    prob = pred.softmax(1).numpy()
    gt = gt.numpy()
    losses = []
    for b in range(gt.shape[0]):
        valid = gt[b] != 255
        scores = []
        for c in range(1, pred.shape[1]):
            g = ((gt[b] == c) & valid).astype(float)
            if g.sum() == 0:
                continue
            p = prob[b, c] * valid
            scores.append((2 * (p * g).sum() + eps) /
                          ((p * p).sum() + (g * g).sum() + eps))
        losses.append(1 - np.mean(scores) if scores else 0.0)
    return float(np.mean(losses))


def test_dice_equals_direct_computation():
    torch.manual_seed(1)
    pred = torch.randn(3, 4, 5, 6)
    gt = torch.randint(0, 4, (3, 5, 6))
    gt[0, :2] = 255
    gt[2] = torch.where(gt[2] == 0, 0, 255)  # no foreground: weight 0
    loss = MODELS.build(dict(type='SegDiceLoss'))
    assert loss(pred, gt).item() == pytest.approx(_dice_by_hand(pred, gt),
                                                  rel=1e-6)
    per_sample = MODELS.build(dict(type='SegDiceLoss', reduction='none'))(
        pred, gt)
    assert per_sample.shape == (3, ) and per_sample[2].item() == 0.0


def test_dice_perfect_prediction_is_near_zero_and_has_gradient():
    gt = torch.tensor([[[0, 1, 2], [2, 1, 255]]])
    pred = F.one_hot(gt.clamp(max=2), 3).permute(0, 3, 1, 2).float() * 50
    pred.requires_grad_(True)
    loss = MODELS.build(dict(type='SegDiceLoss'))(pred, gt)
    assert loss.item() < 1e-6
    loss.backward()
    assert pred.grad is not None


def test_mmseg_dice_differs_from_official(official):
    pred, gt, manifest = official
    mmseg_dice = MODELS.build(dict(type='mmseg.DiceLoss', use_sigmoid=False,
                                   ignore_index=255))
    value = mmseg_dice(pred, gt, ignore_index=255).item()
    assert abs(value - manifest['losses']['loss_dice']) > 1e-3


def test_dice_rejects_bad_shapes():
    loss = MODELS.build(dict(type='SegDiceLoss'))
    with pytest.raises(ValueError, match='same B, H, W'):
        loss(torch.randn(1, 3, 4, 4), torch.zeros(1, 4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="'mean' or 'none'"):
        MODELS.build(dict(type='SegDiceLoss', reduction='sum'))
