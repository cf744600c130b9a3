# Tiny Sapiens2 albedo model that trains on the bundled synthetic
# scenes (tests/data/dense_sample, 4 ray-cast scenes at 256x192 with their
# textured albedo, letterboxed to 128x96) on a CPU in seconds: a smoke test of the whole recipe (data,
# head, official losses, metric, visualization), not a model to use.
#   python tools/train.py configs/albedo/sapiens2-tiny_1xb2-30_densesample-128x96.py
default_scope = 'sapiens2_mm'
_base_ = ['../_base_/default_runtime.py',
          '../_base_/datasets/dense_sample.py']
height, width = 128, 96  # the sample base's size

model = dict(
    type='DenseEstimator',
    data_preprocessor=dict(
        type='mmengine.ImgDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True),
    backbone=dict(
        type='Sapiens2',
        arch=dict(embed_dims=64, num_layers=4, num_heads=4,
                  feedforward_channels=256, num_tokenizer_layers=2),
        img_size=(height, width),
        patch_size=16,
        final_norm=True,
        with_cls_token=True,
        out_type='featmap',
        out_indices=[-1],
        init_cfg=None),
    decode_head=dict(
        type='AlbedoHead',
        in_channels=64,
        upsample_channels=(32, 16, 16, 8),
        conv_out_channels=(8, 8),
        conv_kernel_sizes=(3, 3),
        # the official terms: L1 x2, gradient x2, chromaticity x1
        loss_decode=[
            dict(type='MaskedL1Loss', loss_weight=2.0),
            dict(type='AlbedoGradL1Loss', loss_weight=2.0),
            dict(type='AlbedoChromaticityL1Loss', loss_weight=1.0),
        ]),
    train_cfg=dict(),
    test_cfg=dict(mode='whole', flip_test=False))

train_dataloader = _base_.dense_sample_albedo_train_dataloader
val_dataloader = _base_.dense_sample_albedo_test_dataloader
test_dataloader = val_dataloader
val_evaluator = _base_.dense_sample_albedo_evaluator
test_evaluator = val_evaluator

max_iters = 30
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=2e-3, betas=(0.9, 0.999),
                   weight_decay=0.01),
    clip_grad=dict(max_norm=4.0, norm_type=2))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=5),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters,
                 val_interval=max_iters)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
default_hooks = dict(logger=dict(interval=10),
                     checkpoint=dict(interval=max_iters, max_keep_ckpts=1))
env_cfg = dict(dist_cfg=dict(backend='gloo'))
