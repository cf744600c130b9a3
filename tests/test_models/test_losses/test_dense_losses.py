"""Dense losses against the official values, analytic cases and edge cases."""
import json
import os.path as osp

import pytest
import torch
from mmengine.structures import PixelData
from safetensors.torch import load_file

from sapiens2_mm.models.heads.dense.albedo_head import ALBEDO_LOSSES
from sapiens2_mm.models.heads.dense.normal_head import NORMAL_LOSSES
from sapiens2_mm.models.heads.dense.pointmap_head import POINTMAP_LOSSES
from sapiens2_mm.models.losses.pointmap import pointmap_normals
from sapiens2_mm.registry import MODELS
from sapiens2_mm.structures import DenseDataSample
from tests.conftest import DATA_DIR

LOSS_DIR = osp.join(DATA_DIR, 'official_losses')
HEADS = {'normal': ('NormalHead', 'gt_normal'),
         'albedo': ('AlbedoHead', 'gt_albedo'),
         'pointmap': ('PointmapHead', 'gt_pointmap')}
# The official 1b loss lists, translated to this package's type names.
OFFICIAL_TYPES = {
    'L1Loss': ('MaskedL1Loss', 'PointmapL1Loss'),
    'MultiscaleL1Loss': ('PointmapMultiscaleL1Loss',),
    'SiLogLoss': ('PointmapSiLogLoss',),
}


def _small_head(task):
    kind = HEADS[task][0]
    extra = {}
    if task == 'pointmap':
        extra = dict(scale_conv_out_channels=(4,), scale_conv_kernel_sizes=(1,),
                     scale_final_layer=(4, 1), scale_pool_size=(1, 1))
    return MODELS.build(dict(type=kind, in_channels=4, upsample_channels=(4,),
                             conv_out_channels=(4,), conv_kernel_sizes=(3,),
                             **extra))


def _samples(task, tensors, mask=None):
    field = HEADS[task][1]
    mask = tensors['mask'] if mask is None else mask
    samples = []
    for b in range(mask.shape[0]):
        sample = DenseDataSample(metainfo=dict(img_path=f'sample{b}.png'))
        sample.set_data({field: PixelData(data=tensors[field][b]),
                         'gt_mask': PixelData(data=mask[b] > 0)})
        if task == 'pointmap':
            sample.set_metainfo(dict(
                gt_mean_depth=float(tensors['gt_mean_depth'][b]),
                cam_K=tensors['original_K'][b].numpy(),
                canonical_scale=float(tensors['scale'][b])))
        samples.append(sample)
    return samples


def _outputs(task, tensors):
    if task == 'pointmap':
        return tensors['pred'], tensors['pred_scale']
    return tensors['pred']


def test_default_losses_are_the_official_1b_configuration():
    with open(osp.join(LOSS_DIR, 'loss_manifest.json')) as f:
        manifest = json.load(f)
    ours = {'normal': NORMAL_LOSSES, 'albedo': ALBEDO_LOSSES,
            'pointmap': POINTMAP_LOSSES}
    for task, losses in ours.items():
        official = manifest[task]['loss_decode']
        assert len(losses) == len(official), task
        for mine, theirs in zip(losses, official):
            names = OFFICIAL_TYPES.get(theirs['type'], (theirs['type'],))
            assert mine['type'] in names, (task, mine, theirs)
            assert mine['loss_weight'] == theirs['loss_weight'], (task, mine)
            if 'scale_factor' in theirs:
                assert mine['scale_factor'] == theirs['scale_factor']


def _collinear_gt_steps_are_rounding_noise(tensors) -> bool:
    """Whether this CPU's float32 cross product gives the official run's
    rounding noise (not 0) for GT pixels whose neighbour steps are exactly
    collinear.

    Of the pointmap GT's valid pixels, 48 have exactly collinear steps
    (their cross product is 0 in exact arithmetic). A kernel with fused
    multiply-add, as the official run's and torch's AVX2 and AVX-512 CPU
    kernels (measured), leaves a rounding residue there (~1e-5, above the
    1e-6 validity threshold), so those pixels count, with noise normals, in
    ``loss_normal``; torch's kernel without (x86 at
    ``ATEN_CPU_CAPABILITY=default``) gives exactly 0, drops them, and
    ``loss_normal`` is 7e-4 (relative) lower. The official value is then not
    reproducible on this CPU.
    """
    gt = tensors['gt_pointmap'] / tensors['scale'].reshape(-1, 1, 1, 1)
    padded = torch.nn.functional.pad(gt, (1, 1, 1, 1), mode='reflect')
    centre = padded[:, :, 1:-1, 1:-1]
    dx = (padded[:, :, 1:-1, 2:] - centre) * 100
    dy = (padded[:, :, 2:, 1:-1] - centre) * 100
    # float32 products are exact in float64: exactly collinear steps
    collinear = (torch.cross(dx.double(), dy.double(), dim=1) == 0).all(1)
    _, valid = pointmap_normals(gt, tensors['mask'])
    return bool((valid[:, 0] & collinear).any())


@pytest.mark.parametrize('task', sorted(HEADS))
def test_head_loss_reproduces_official_values(task):
    with open(osp.join(LOSS_DIR, 'loss_manifest.json')) as f:
        expected = json.load(f)[task]['losses']
    tensors = load_file(osp.join(LOSS_DIR, f'loss_{task}.safetensors'))
    losses = _small_head(task).loss_by_feat(_outputs(task, tensors),
                                            _samples(task, tensors))
    assert list(losses) == list(expected)
    unreproducible = task == 'pointmap' and \
        not _collinear_gt_steps_are_rounding_noise(tensors)
    for name, value in expected.items():
        if unreproducible and name == 'loss_normal':
            continue
        assert losses[name].item() == pytest.approx(value, rel=1e-5), name
    if unreproducible:
        pytest.skip('loss_normal: this CPU rounds collinear GT steps to 0 '
                    'where the official run left noise normals (see '
                    '_collinear_gt_steps_are_rounding_noise); the other '
                    'terms match')


@pytest.mark.parametrize('task', sorted(HEADS))
def test_empty_mask_gives_zero_with_a_gradient(task):
    tensors = load_file(osp.join(LOSS_DIR, f'loss_{task}.safetensors'))
    pred = tensors['pred'].clone().requires_grad_(True)
    outputs = pred
    if task == 'pointmap':
        outputs = (pred, tensors['pred_scale'].clone().requires_grad_(True))
    empty = torch.zeros_like(tensors['mask'])
    losses = _small_head(task).loss_by_feat(outputs,
                                            _samples(task, tensors, empty))
    total = sum(losses.values())
    for name, value in losses.items():
        assert value.item() == 0.0, name
    total.backward()
    assert pred.grad is not None and torch.isfinite(pred.grad).all()
    assert pred.grad.abs().max() == 0


def test_nan_targets_outside_the_mask_do_not_leak():
    tensors = load_file(osp.join(LOSS_DIR, 'loss_pointmap.safetensors'))
    clean = _small_head('pointmap').loss_by_feat(
        _outputs('pointmap', tensors), _samples('pointmap', tensors))
    dirty = dict(tensors)
    gt = tensors['gt_pointmap'].clone()
    invalid = (tensors['mask'] == 0).expand_as(gt)
    gt[invalid] = float('nan')
    dirty['gt_pointmap'] = gt
    pred = tensors['pred'].clone().requires_grad_(True)
    losses = _small_head('pointmap').loss_by_feat(
        (pred, tensors['pred_scale']), _samples('pointmap', dirty))
    sum(losses.values()).backward()
    assert torch.isfinite(pred.grad).all()
    for name in ('loss_l1', 'loss_silog', 'loss_K_consistency',
                 'loss_shift_invariant', 'loss_scale_l1'):
        assert losses[name].item() == pytest.approx(clean[name].item(),
                                                    rel=1e-6), name


def test_silog_perfect_prediction_has_finite_gradient_and_same_value():
    silog = MODELS.build(dict(type='PointmapSiLogLoss'))
    depth = torch.rand(2, 1, 8, 6) + 0.5
    mask = torch.ones(2, 1, 8, 6)
    pred = depth.clone().requires_grad_(True)
    loss = silog(pred, depth, mask)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.isfinite(pred.grad).all()
    # Values elsewhere equal the unguarded formula.
    other = (depth * torch.linspace(0.5, 2.0, 48).view(1, 1, 8, 6))
    d = torch.log(depth) - torch.log(other)
    ref = (d.pow(2).mean((1, 2, 3)) - 0.5 * d.mean((1, 2, 3)).pow(2)).sqrt()
    assert silog(other, depth, mask).item() == pytest.approx(
        ref.mean().item(), rel=1e-6)


def test_cosine_loss_hand_computed():
    loss = MODELS.build(dict(type='NormalCosineSimilarityLoss',
                             loss_weight=10.0))
    gt = torch.zeros(1, 3, 2, 2)
    gt[:, 2] = 1.0
    pred = gt.clone() * 5  # same direction, other length: 0
    mask = torch.ones(1, 1, 2, 2)
    assert loss(pred, gt, mask).item() == pytest.approx(0.0, abs=1e-7)
    pred[:, :, 0, 0] = torch.tensor([0.0, 0.0, -2.0])  # one opposite pixel
    pred[:, :, 0, 1] = torch.tensor([3.0, 0.0, 0.0])   # one orthogonal
    assert loss(pred, gt, mask).item() == pytest.approx(10 * (2 + 1) / 4)


def test_intrinsics_consistency_is_zero_for_a_back_projection():
    K = torch.tensor([[[100.0, 0.0, 2.5], [0.0, 120.0, 1.5], [0, 0, 1]]])
    z = torch.rand(1, 4, 6) + 1.0
    u = torch.arange(6.0).view(1, 1, 6)
    v = torch.arange(4.0).view(1, 4, 1)
    points = torch.stack([(u - 2.5) * z / 100, (v - 1.5) * z / 120, z], 1)
    loss = MODELS.build(dict(type='PointmapIntrinsicsConsistencyLoss'))
    mask = torch.ones(1, 1, 4, 6)
    assert loss(points, points, mask, intrinsics=K).item() == pytest.approx(
        0.0, abs=1e-6)
    shifted = points.clone()
    shifted[:, 0] += 0.5
    assert loss(shifted, points, mask, intrinsics=K).item() == pytest.approx(
        0.5)
    with pytest.raises(ValueError, match='intrinsics'):
        loss(points, points, mask)


def test_pointmap_normals_of_a_plane_face_the_camera():
    z = torch.full((1, 1, 5, 5), 2.0)
    u = torch.arange(5.0).view(1, 1, 1, 5).expand(1, 1, 5, 5)
    v = torch.arange(5.0).view(1, 1, 5, 1).expand(1, 1, 5, 5)
    plane = torch.cat([u * 0.01, v * 0.01, z], 1)
    normals, valid = pointmap_normals(plane, torch.ones(1, 1, 5, 5))
    assert valid[:, :, :-1, :-1].all()
    # cross(right, down) of an x-right, y-down plane is +z (away from camera).
    torch.testing.assert_close(normals[0, :, 1, 1], torch.tensor([0, 0, 1.0]))


def test_clamp_and_scale_loss():
    l1 = MODELS.build(dict(type='PointmapL1Loss', loss_weight=2.0))
    pred = torch.full((1, 3, 2, 2), 10.0)
    gt = torch.zeros(1, 3, 2, 2)
    mask = torch.ones(1, 1, 2, 2)
    ctx = dict(mean_depth=torch.ones(1, 1, 1, 1))
    assert l1(pred, gt, mask, **ctx).item() == 4.0  # 2 * 30 clamped to 4
    ctx = dict(mean_depth=torch.full((1, 1, 1, 1), 100.0))
    assert l1(pred, gt, mask, **ctx).item() == pytest.approx(2 * 0.3)
    scale = MODELS.build(dict(type='PointmapScaleL1Loss', loss_weight=4.0))
    mask2 = torch.ones(2, 1, 2, 2)
    mask2[1] = 0
    got = scale(None, None, mask2, pred_scale=torch.tensor([[1.0], [5.0]]),
                gt_scale=torch.tensor([[0.5], [0.5]]))
    assert got.item() == pytest.approx(4 * 0.5)  # the empty sample is skipped
    official = MODELS.build(dict(type='PointmapScaleL1Loss', loss_weight=4.0,
                                 skip_empty_masks=False))
    got = official(None, None, mask2, pred_scale=torch.tensor([[1.0], [5.0]]),
                   gt_scale=torch.tensor([[0.5], [0.5]]))
    assert got.item() == pytest.approx(4 * (0.5 + 4.5) / 2)


def test_missing_gt_and_bad_shapes_are_reported():
    tensors = load_file(osp.join(LOSS_DIR, 'loss_normal.safetensors'))
    head = _small_head('normal')
    sample = DenseDataSample(metainfo=dict(img_path='a.png'))
    sample.gt_mask = PixelData(data=tensors['mask'][0] > 0)
    with pytest.raises(KeyError, match="a.png.*gt_normal"):
        head.loss_by_feat(tensors['pred'][:1], [sample])
    loss = MODELS.build(dict(type='MaskedL1Loss'))
    with pytest.raises(ValueError, match='same shape'):
        loss(tensors['pred'], tensors['pred'][:, :2], tensors['mask'])
    with pytest.raises(ValueError, match='valid_mask'):
        loss(tensors['pred'], tensors['pred'], tensors['mask'][:, :, :3])


def test_bf16_predictions_count_mask_pixels_exactly():
    # 3001 valid pixels: a bf16 count would be 3008.
    mask = torch.zeros(1, 1, 64, 48)
    mask.view(-1)[:3001] = 1
    pred = torch.randn(1, 3, 64, 48).bfloat16()
    gt = torch.randn(1, 3, 64, 48)
    loss = MODELS.build(dict(type='MaskedL1Loss'))
    ref = ((pred.float() - gt).abs() * mask).sum() / 3001
    assert loss(pred, gt, mask).item() == pytest.approx(ref.item(), rel=1e-6)
