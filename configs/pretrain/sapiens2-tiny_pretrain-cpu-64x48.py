# Tiny Sapiens2 pretraining on the bundled photos (tests/data/coco_sample and
# tests/data/seg_sample/images; the folder is walked recursively), on a CPU in
# about a minute: a smoke test of the whole objective, not a model to use.
#   python tools/train.py configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pretrain.py',
]
global_size = (64, 48)  # (H, W): a 4 x 3 patch grid
local_size = (32, 32)
tiny_arch = dict(_delete_=True, embed_dims=32, num_layers=2, num_heads=4,
                 feedforward_channels=64, num_tokenizer_layers=1)
num_prototypes = 64
model = dict(
    backbone=dict(arch=tiny_arch, img_size=global_size, with_cp=False),
    neck=dict(in_channels=32, decoder_embed_dims=32, depth=1, num_heads=2),
    dino_head=dict(in_channels=32, hidden_channels=64, bottleneck_channels=16,
                   num_prototypes=num_prototypes),
    dino_loss=dict(out_dim=num_prototypes),
    mask_ratio=0.5)
_aspect = (0.56, 0.94)
_color = [
    dict(type='mmcv.RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='mmpretrain.RandomApply', prob=0.8, transforms=[
        dict(type='mmpretrain.ColorJitter', brightness=0.4, contrast=0.4,
             saturation=0.2, hue=0.1, backend='cv2')]),
]
global_view_1 = [
    dict(type='mmpretrain.RandomResizedCrop', scale=global_size,
         crop_ratio_range=(0.32, 1.0), aspect_ratio_range=_aspect),
    *_color, dict(type='RandomGaussianBlur', prob=1.0)]
global_view_2 = [
    dict(type='mmpretrain.RandomResizedCrop', scale=global_size,
         crop_ratio_range=(0.32, 1.0), aspect_ratio_range=_aspect),
    *_color, dict(type='RandomGaussianBlur', prob=0.1),
    dict(type='mmpretrain.Solarize', thr=128, prob=0.2)]
local_view = [
    dict(type='mmpretrain.RandomResizedCrop', scale=local_size,
         crop_ratio_range=(0.05, 0.32), aspect_ratio_range=_aspect),
    *_color]
train_pipeline = [
    dict(type='Sapiens2LoadImage', skip_bad=True),
    dict(type='CheckMinImageSize', min_size=global_size, skip=True),
    dict(type='mmpretrain.MultiView', num_views=[1, 1, 2],
         transforms=[global_view_1, global_view_2, local_view]),
    dict(type='mmpretrain.PackInputs'),
]
train_dataloader = dict(
    batch_size=8, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(type='ImageFolderDataset', data_root='tests/data',
                 folders=['coco_sample', 'seg_sample/images'],
                 pipeline=train_pipeline))

max_iters = 40
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=2e-3, betas=(0.9, 0.95),
                   weight_decay=0.05),
    constructor='Sapiens2LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(num_layers=2, layer_decay_rate=0.98),
    clip_grad=dict(max_norm=3.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-2, by_epoch=False, begin=0, end=5),
    dict(type='CosineAnnealingLR', eta_min=1e-5, by_epoch=False, begin=5,
         end=max_iters, T_max=max_iters - 5),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters)
custom_hooks = [
    dict(type='PretrainScheduleHook', momentum_start=0.9, momentum_end=1.0,
         teacher_temp_start=0.04, teacher_temp_end=0.07,
         teacher_temp_warmup_iters=10, freeze_prototypes_iters=3),
    dict(type='RNGStateHook'),
    dict(type='PretrainReconstructionVisHook', interval=20, num_images=4),
]
default_hooks = dict(logger=dict(interval=5),
                     checkpoint=dict(interval=max_iters, max_keep_ckpts=1))
env_cfg = dict(dist_cfg=dict(backend='gloo'))
