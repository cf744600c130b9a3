"""Layer-wise lr decay against hand-derived per-parameter values (official recipe)."""
import pytest
import torch
from torch import nn

from sapiens2_mm.models.backbones import Sapiens2
from sapiens2_mm.registry import OPTIM_WRAPPER_CONSTRUCTORS

BASE_LR, BASE_WD, RATE = 5e-4, 0.1, 0.8
TINY = dict(embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=64,
            num_tokenizer_layers=1)


class TinyTaskModel(nn.Module):
    """backbone + decode_head, like the official estimators."""

    def __init__(self, **backbone_kwargs):
        super().__init__()
        self.backbone = Sapiens2(arch=TINY, out_type='featmap', **backbone_kwargs)
        self.decode_head = nn.Conv2d(16, 3, 1)


def build_optimizer(model):
    constructor = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='Sapiens2LayerDecayOptimWrapperConstructor',
             optim_wrapper_cfg=dict(
                 type='OptimWrapper',
                 optimizer=dict(type='AdamW', lr=BASE_LR, weight_decay=BASE_WD)),
             paramwise_cfg=dict(num_layers=2, layer_decay_rate=RATE)))
    return constructor(model).optimizer


def per_param(optimizer, model):
    names = {id(p): n for n, p in model.named_parameters()}
    return {
        names[id(p)]: (group['lr'], group['weight_decay'])
        for group in optimizer.param_groups for p in group['params']
    }


def test_every_parameter_gets_the_official_lr_and_wd():
    model = TinyTaskModel(use_tokenizer=True)
    got = per_param(build_optimizer(model), model)
    # N = L + 2 = 4; lr = base * rate ** (N - 1 - layer_id).
    stem, block0, block1, top = RATE**3, RATE**2, RATE**1, 1.0
    wd = BASE_WD
    expected = {
        'backbone.cls_token': (stem, 0),
        'backbone.storage_tokens': (stem, 0),  # tokens are exempt
        'backbone.patch_embed.projection.weight': (stem, wd),
        'backbone.patch_embed.projection.bias': (stem, 0),
        'backbone.tokenizer.local_pos_embed': (stem, 0),  # pos_embed name
        'backbone.tokenizer.w_cls': (stem, 0),
        'backbone.tokenizer.blocks.0.attn.wq.weight': (stem, wd),
        'backbone.tokenizer.blocks.0.ln1.weight': (stem, 0),
        'backbone.blocks.0.ln1.weight': (block0, 0),
        'backbone.blocks.0.attn.wq.weight': (block0, wd),
        'backbone.blocks.0.attn.wq.bias': (block0, 0),
        'backbone.blocks.0.attn.q_norm.weight': (block0, 0),
        'backbone.blocks.0.attn.gamma.weight': (block0, 0),
        'backbone.blocks.0.ffn.w12.weight': (block0, wd),
        'backbone.blocks.1.ffn.w3.weight': (block1, wd),
        'backbone.blocks.1.ffn.w3.bias': (block1, 0),
        'backbone.ln1.weight': (top, 0),
        'decode_head.weight': (top, wd),
        'decode_head.bias': (top, 0),
    }
    for name, (scale, decay) in expected.items():
        lr, weight_decay = got[name]
        assert lr == pytest.approx(BASE_LR * scale, rel=1e-12), name
        assert weight_decay == decay, name
    assert set(got) == {n for n, _ in model.named_parameters()}


def test_groups_are_one_per_lr_and_weight_decay():
    model = TinyTaskModel()
    optimizer = build_optimizer(model)
    keys = [(g['lr'], g['weight_decay']) for g in optimizer.param_groups]
    assert len(keys) == len(set(keys))
    # stem, 2 blocks and top, each with and without decay.
    assert len(keys) == 8


def test_frozen_parameters_are_left_out():
    model = TinyTaskModel(frozen_stages=1)
    got = per_param(build_optimizer(model), model)
    assert 'backbone.blocks.0.attn.wq.weight' not in got
    assert 'backbone.patch_embed.projection.weight' not in got
    assert 'backbone.blocks.1.attn.wq.weight' in got


def test_missing_paramwise_keys_are_reported():
    constructor = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='Sapiens2LayerDecayOptimWrapperConstructor',
             optim_wrapper_cfg=dict(
                 type='OptimWrapper', optimizer=dict(type='AdamW', lr=1e-3)),
             paramwise_cfg=dict(num_layers=2)))
    with pytest.raises(KeyError, match='layer_decay_rate'):
        constructor(TinyTaskModel())


def test_too_small_num_layers_is_reported():
    constructor = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='Sapiens2LayerDecayOptimWrapperConstructor',
             optim_wrapper_cfg=dict(
                 type='OptimWrapper', optimizer=dict(type='AdamW', lr=1e-3)),
             paramwise_cfg=dict(num_layers=1, layer_decay_rate=0.9)))
    with pytest.raises(ValueError, match='num_layers'):
        constructor(TinyTaskModel())


def test_optimizer_steps():
    model = TinyTaskModel()
    optimizer = build_optimizer(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    out = model.decode_head(model.backbone(torch.randn(1, 3, 32, 32))[0])
    out.sum().backward()
    optimizer.step()
    changed = {n for n, p in model.named_parameters()
               if not torch.equal(p, before[n])}
    # Every parameter that received a gradient moved (AdamW steps ~ lr).
    with_grad = {n for n, p in model.named_parameters()
                 if p.grad is not None and p.grad.abs().sum() > 0}
    assert with_grad and with_grad <= changed


def build_constructor(**paramwise_cfg):
    return OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='Sapiens2LayerDecayOptimWrapperConstructor',
             optim_wrapper_cfg=dict(
                 type='OptimWrapper',
                 optimizer=dict(type='AdamW', lr=BASE_LR, weight_decay=BASE_WD)),
             paramwise_cfg=paramwise_cfg))


def test_num_layers_is_counted_from_the_backbone():
    model = TinyTaskModel(frozen_stages=1)  # frozen blocks count too
    got = per_param(build_constructor(layer_decay_rate=RATE)(model).optimizer,
                    model)
    # L = 2 blocks: block 1 gets rate ** (L + 1 - 2), the head rate ** 0.
    assert got['backbone.blocks.1.ffn.w3.weight'][0] == pytest.approx(
        BASE_LR * RATE, rel=1e-12)
    assert got['decode_head.weight'][0] == pytest.approx(BASE_LR, rel=1e-12)


def test_num_layers_that_disagrees_with_the_backbone_is_refused():
    # 3 > 2 blocks passes the per-block index check but shifts every lr.
    with pytest.raises(ValueError, match=r'num_layers=3 .*has 2 blocks'):
        build_constructor(num_layers=3, layer_decay_rate=RATE)(TinyTaskModel())


def test_a_model_without_blocks_is_refused():
    with pytest.raises(ValueError, match='no transformer blocks'):
        build_constructor(layer_decay_rate=RATE)(nn.Linear(2, 2))

