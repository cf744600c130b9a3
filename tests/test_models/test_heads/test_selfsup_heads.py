"""Pretraining heads and losses against hand-computed cases."""
import math

import pytest
import torch
import torch.nn.functional as F

from sapiens2_mm.models.heads.selfsup import (
    DINOClsLoss,
    DINOHead,
    RectMAEHead,
    koleo_loss,
    patchify,
    sinkhorn_knopp,
    unpatchify,
)


def test_patchify_rectangular_layout():
    images = torch.arange(2 * 3 * 4 * 6, dtype=torch.float).reshape(2, 3, 4, 6)
    patches = patchify(images, 2)  # grid 2 x 3
    assert patches.shape == (2, 6, 12)
    # patch (row 1, col 2) = pixels rows 2-3, cols 4-5; order (py, px, c).
    expected = torch.stack([images[0, c, 2 + py, 4 + px]
                            for py in range(2) for px in range(2)
                            for c in range(3)])
    assert torch.equal(patches[0, 1 * 3 + 2], expected)
    assert torch.equal(unpatchify(patches, (2, 3), 2), images)
    with pytest.raises(ValueError, match='divisible'):
        patchify(torch.zeros(1, 3, 5, 6), 2)


def test_visible_patch_predictions_do_not_change_the_loss():
    torch.manual_seed(0)
    head = RectMAEHead(patch_size=4)
    images = torch.randn(2, 3, 8, 12)
    pred = torch.randn(2, 6, 48)
    mask = torch.tensor([[True, False, True, False, False, False],
                         [False, False, False, True, True, True]])
    loss = head.loss(pred, images, mask)
    changed = pred.clone()
    changed[~mask] = 1e3 * torch.randn_like(changed[~mask])
    assert torch.equal(head.loss(changed, images, mask), loss)
    # Hand reference: mean over hidden patches of the per-patch MSE.
    target = patchify(images, 4)
    ref = torch.stack([((pred[b, n] - target[b, n])**2).mean()
                       for b in range(2) for n in range(6) if mask[b, n]])
    assert torch.allclose(loss, ref.mean())
    hidden = pred.clone()
    hidden[mask] += 1.0
    assert not torch.equal(head.loss(hidden, images, mask), loss)
    assert head.loss(pred, images, torch.zeros_like(mask)) == 0


def test_norm_pix_removes_patch_color():
    images = torch.zeros(1, 3, 4, 4)
    images[:, 0] = 5.0  # a flat red image
    images[:, :, 0, 0] += 1.0
    plain, normed = RectMAEHead(2).target(images), RectMAEHead(
        2, norm_pix=True).target(images)
    assert plain[0, 1].mean() > 1  # the color is in the plain target
    assert torch.allclose(normed.mean(-1), torch.zeros(1, 4), atol=1e-5)


@pytest.mark.parametrize('iterations,tol', [(3, 0.1), (200, 1e-4)])
def test_sinkhorn_is_doubly_stochastic(iterations, tol):
    torch.manual_seed(0)
    logits = torch.randn(8, 4)
    q = sinkhorn_knopp(logits, temperature=0.5, num_iterations=iterations)
    assert torch.allclose(q.sum(1), torch.ones(8), atol=1e-5)
    # Columns get equal mass B / K = 2.
    assert (q.sum(0) - 2.0).abs().max() < tol
    assert (q >= 0).all()


def test_sinkhorn_balances_a_collapsed_teacher():
    logits = torch.zeros(6, 3)
    logits[:, 0] = 5.0  # every sample prefers prototype 0
    softmax_mass = torch.softmax(logits / 0.1, -1).sum(0)
    q = sinkhorn_knopp(logits, 0.1, num_iterations=100)
    assert softmax_mass[0] > 5.9
    assert torch.allclose(q.sum(0), torch.full((3,), 2.0), atol=1e-3)


def test_centering_matches_formula():
    loss = DINOClsLoss(out_dim=2, teacher_temp=0.5, teacher_norm='centering',
                       center_momentum=0.9)
    logits = torch.tensor([[1.0, 0.0], [3.0, 2.0]])
    probs = loss.teacher_targets(logits)
    # The first call uses centre 0: softmax(l / 0.5).
    e = math.exp(2.0)
    assert torch.allclose(probs, torch.tensor([[e / (e + 1), 1 / (e + 1)]] * 2))
    # centre <- 0.9 * 0 + 0.1 * batch mean (2, 1).
    assert torch.allclose(loss.center, torch.tensor([[0.2, 0.1]]))
    probs = loss.teacher_targets(torch.tensor([[0.2, 0.1]]))
    assert torch.allclose(probs, torch.tensor([[0.5, 0.5]]))
    assert torch.allclose(loss.center, torch.tensor([[0.2, 0.1]]))


def test_dino_loss_pairs_and_value():
    loss = DINOClsLoss(out_dim=3, student_temp=1.0)
    s = [torch.tensor([[0.0, 1.0, 2.0]]), torch.tensor([[1.0, 0.0, 0.0]]),
         torch.tensor([[0.0, 0.0, 3.0]])]
    t = [torch.tensor([[0.2, 0.3, 0.5]]), torch.tensor([[1.0, 0.0, 0.0]])]
    value = loss(s, t, num_global=2)

    def ce(target, logits):
        return -(target * F.log_softmax(logits, -1)).sum()

    # pairs: (s0, t1), (s1, t0), (local s2, t0), (s2, t1): 2*1 + 2*1 = 4.
    ref = (ce(t[1], s[0]) + ce(t[0], s[1]) + ce(t[0], s[2]) +
           ce(t[1], s[2])) / 4
    assert torch.allclose(value, ref)
    with pytest.raises(ValueError, match='global'):
        loss(s[:1], t[:1], num_global=1)
    with pytest.raises(ValueError, match='teacher_norm'):
        DINOClsLoss(3, teacher_norm='softmax')


def test_koleo_hand_computed():
    # Three unit vectors at 0, 90 and 180 degrees: nearest distances are
    # sqrt(2), sqrt(2), sqrt(2) -> loss = -log(sqrt(2)).
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert torch.allclose(koleo_loss(x), torch.tensor(-math.log(2**0.5)),
                          atol=1e-6)
    # 0, 60, 180 degrees: nearest 1, 1, sqrt(2 + 2cos60)=sqrt(3) for 180?
    # 180 vs 60 deg: chord = 2 sin(60) = sqrt(3); vs 0 deg: 2. -> sqrt(3).
    y = torch.tensor([[1.0, 0.0], [0.5, 3**0.5 / 2], [-2.0, 0.0]])
    ref = -(math.log(1.0) + math.log(1.0) + math.log(3**0.5)) / 3
    assert torch.allclose(koleo_loss(y), torch.tensor(ref), atol=1e-6)
    with pytest.raises(ValueError, match='at least 2'):
        koleo_loss(torch.ones(1, 2))


def test_dino_head_normalized_prototypes_and_freezing():
    torch.manual_seed(0)
    head = DINOHead(8, hidden_channels=16, bottleneck_channels=4,
                    num_prototypes=5)
    x = torch.randn(3, 8)
    out = head(x)
    assert out.shape == (3, 5) and out.abs().max() <= 1 + 1e-6
    # Scaling a prototype row does not change the output (weight norm, g=1).
    with torch.no_grad():
        head.prototypes[2] *= 7.0
    assert torch.allclose(head(x), out, atol=1e-6)
    head.freeze_prototypes = True
    head(x).sum().backward()
    assert torch.equal(head.prototypes.grad, torch.zeros_like(head.prototypes))
    assert head.mlp[0].weight.grad.abs().sum() > 0
    head.zero_grad()
    head.freeze_prototypes = False
    head(x).sum().backward()
    assert head.prototypes.grad.abs().sum() > 0
