# Pretraining schedule (a choice; the paper gives no numbers): AdamW
# (betas 0.9/0.95 of MAE), lr 2e-4 for a global batch of 1024 (scale
# linearly), weight decay 0.05, 10k linear warm-up iterations then cosine to
# 1e-6, grad clip 3.0 (DINOv2), layer decay 0.98 (DINOv3's pretraining value;
# leaf configs set num_layers). bf16 autocast.
max_iters = 500000
warmup_iters = 10000
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='AdamW', lr=2e-4, betas=(0.9, 0.95),
                   weight_decay=0.05),
    constructor='Sapiens2LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.98),
    clip_grad=dict(max_norm=3.0, norm_type=2))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='CosineAnnealingLR', eta_min=1e-6, by_epoch=False,
         begin=warmup_iters, end=max_iters, T_max=max_iters - warmup_iters),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters)
auto_scale_lr = dict(enable=False, base_batch_size=1024)
