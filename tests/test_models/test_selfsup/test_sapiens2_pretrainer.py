"""One full CPU step of the Sapiens2 pretrainer: losses, gradients, EMA."""
import copy

import pytest
import torch

from sapiens2_mm.registry import MODELS

TINY = dict(embed_dims=32, num_layers=2, num_heads=4, feedforward_channels=64,
            num_tokenizer_layers=1)


def tiny_pretrainer_cfg(**overrides):
    cfg = dict(
        type='Sapiens2Pretrainer',
        backbone=dict(type='Sapiens2', arch=TINY, img_size=(64, 48)),
        neck=dict(type='RectMAEDecoder', in_channels=32, decoder_embed_dims=16,
                  depth=1, num_heads=2, patch_size=16),
        head=dict(type='RectMAEHead', patch_size=16, norm_pix=False),
        dino_head=dict(type='DINOHead', in_channels=32, hidden_channels=32,
                       bottleneck_channels=16, num_prototypes=64),
        dino_loss=dict(type='DINOClsLoss', out_dim=64),
        mask_ratio=0.5, teacher_momentum=0.9, koleo_loss_weight=0.1)
    cfg.update(overrides)
    return cfg


def views(batch=4, locals_=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = [torch.randn(batch, 3, 64, 48, generator=gen) for _ in range(2)]
    out += [torch.randn(batch, 3, 32, 32, generator=gen) for _ in range(locals_)]
    return out


def test_one_step_losses_gradients_and_ema():
    torch.manual_seed(0)
    model = MODELS.build(tiny_pretrainer_cfg())
    model.init_weights()
    teacher = model.teacher.module
    # After init the teacher is a copy of the student.
    for (name, p_t), p_s in zip(teacher.named_parameters(),
                                model.student_parts().parameters()):
        assert torch.equal(p_t, p_s), name
        assert not p_t.requires_grad
    optim = torch.optim.SGD(
        [p for p in model.parameters() if p.requires_grad], lr=0.5)
    losses = model.loss(views())
    assert set(losses) == {'loss_mae', 'loss_dino', 'loss_koleo',
                           'teacher_entropy', 'teacher_sample_entropy'}
    assert all(torch.isfinite(v) for v in losses.values())
    total = sum(v for k, v in losses.items() if 'loss' in k)
    total.backward()
    for prefix in ('backbone.blocks.0.attn.wq.weight', 'backbone.cls_token',
                   'backbone.patch_embed.projection.weight',
                   'neck.decoder_embed.weight', 'neck.mask_token',
                   'neck.pred.weight', 'dino_head.mlp.0.weight',
                   'dino_head.prototypes'):
        grad = dict(model.named_parameters())[prefix].grad
        assert grad is not None and grad.abs().sum() > 0, prefix
    assert all(p.grad is None for p in teacher.parameters())
    optim.step()
    optim.zero_grad()
    before = copy.deepcopy(teacher.state_dict())
    student = {k: v.detach().clone()
               for k, v in model.student_parts().named_parameters()}
    model.teacher.teacher_momentum = 0.9
    model.loss(views(seed=1))  # the EMA update happens at the start
    moved = 0
    for name, param in teacher.named_parameters():
        expected = 0.9 * before[name] + 0.1 * student[name]
        assert torch.allclose(param, expected, atol=1e-6), name
        moved += int(not torch.equal(param, before[name]))
    assert moved > 0
    # The teacher is a real submodule: in the state dict, not optimised.
    keys = model.state_dict().keys()
    assert 'teacher.module.backbone.cls_token' in keys
    assert 'teacher.steps' in keys and 'dino_loss.center' in keys


def test_teacher_sees_unmasked_and_loss_without_locals():
    model = MODELS.build(tiny_pretrainer_cfg(koleo_loss_weight=0.0))
    model.init_weights()
    losses = model.loss(views(locals_=0))
    assert 'loss_koleo' not in losses
    assert torch.isfinite(losses['loss_dino'])


def test_mask_ratio_zero_skips_reconstruction():
    model = MODELS.build(tiny_pretrainer_cfg(mask_ratio=0.0))
    model.init_weights()
    assert 'loss_mae' not in model.loss(views(locals_=0))


@pytest.mark.parametrize('key,value,match', [
    ('mask_ratio', 1.0, r'mask_ratio must be in \[0, 1\)'),
    ('mask_ratio', -0.2, r'mask_ratio must be in \[0, 1\)'),
    ('teacher_momentum', 1.5, r'must be in \[0, 1\]'),
    ('teacher_momentum', -0.1, r'must be in \[0, 1\]'),
])
def test_bad_settings(key, value, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(tiny_pretrainer_cfg(**{key: value}))


def test_bad_views():
    model = MODELS.build(tiny_pretrainer_cfg())
    with pytest.raises(ValueError, match='Expected >= 2 views'):
        model.loss([torch.randn(2, 3, 64, 48)])
    with pytest.raises(ValueError, match='Global crops differ'):
        model.loss([torch.randn(2, 3, 64, 48), torch.randn(2, 3, 32, 48)])


def test_teacher_momentum_convention():
    model = MODELS.build(tiny_pretrainer_cfg(teacher_momentum=0.996))
    assert abs(model.teacher.momentum - 0.004) < 1e-12  # mmengine's weight
    model.teacher.teacher_momentum = 1.0
    assert model.teacher.momentum == 0.0


def test_window_level_masking_with_the_4k_tokenizer():
    model = MODELS.build(tiny_pretrainer_cfg(
        backbone=dict(type='Sapiens2', arch=TINY, img_size=(128, 128),
                      use_tokenizer=True),
        neck=dict(type='RectMAEDecoder', in_channels=32, decoder_embed_dims=16,
                  depth=1, num_heads=2, patch_size=64),
        head=dict(type='RectMAEHead', patch_size=64), koleo_loss_weight=0.0))
    model.init_weights()
    gen = torch.Generator().manual_seed(0)
    views = [torch.randn(2, 3, 128, 128, generator=gen) for _ in range(2)]
    losses = model.loss(views)  # 2 x 2 window grid, 2 windows kept
    assert torch.isfinite(losses['loss_mae']) and torch.isfinite(
        losses['loss_dino'])
    out = model.reconstruct(views[0])
    assert out['pred'].shape == (2, 4, 64 * 64 * 3)
    assert out['mask'].sum(1).tolist() == [2, 2]


def test_ema_matches_parameters_after_wrapping():
    """Wrappers applied after construction (FSDP's activation checkpointing)
    rename parameters; the EMA still pairs teacher and student by name."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing,
    )

    from sapiens2_mm.models.layers import Sapiens2Block
    model = MODELS.build(tiny_pretrainer_cfg())
    model.init_weights()
    apply_activation_checkpointing(
        model, check_fn=lambda m: isinstance(m, Sapiens2Block))
    names = [n for n, _ in model.named_parameters()]
    assert any('_checkpoint_wrapped_module' in n for n in names)
    with torch.no_grad():
        for p in model.backbone.parameters():
            p.add_(1.0)
    before = [p.clone() for p in model.teacher.module.parameters()]
    model.teacher.teacher_momentum = 0.75
    model.teacher.update_parameters(model.student_parts())
    for old, new, student in zip(before, model.teacher.module.parameters(),
                                 model.student_parts().parameters()):
        assert torch.allclose(new, 0.75 * old + 0.25 * student, atol=1e-6)
