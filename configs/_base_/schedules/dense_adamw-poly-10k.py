# Official dense (normal / pointmap / albedo) schedule: AdamW 5e-4, betas
# (0.9, 0.999), wd 0.1, layer-wise lr decay, 500 iters linear warmup from
# 1e-3 x lr, then linear (power 1) decay to 0 at max_iters. Leaf configs set
# paramwise_cfg (num_layers, rate), clip_grad (2.0 for 0.4b and 0.8b pointmap,
# else 4.0), lr 1e-4 for 5b normal/pointmap and, for the bf16 tasks (normal,
# albedo), type='AmpOptimWrapper'; pointmap trains in fp32.
max_iters = 10000
warmup_iters = 500
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=5e-4, betas=(0.9, 0.999),
                   weight_decay=0.1),
    constructor='Sapiens2LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0, norm_type=2))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False,
         begin=warmup_iters, end=max_iters),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters,
                 val_interval=1000)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
# Checkpoints every 1000 iterations come from default_runtime.py.
