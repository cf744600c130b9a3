# Tiny 4K-shaped Sapiens2 surface-normal model: the path of the 1B-4K config
# (sapiens2-1b-4k_8xb7-40k_normal-4096x3072.py) at CPU size. The tokenizer is
# on (stride 64: a 512x384 input gives the 8x6 feature map of the tiny 1K
# config sapiens2-tiny_1xb2-30_densesample-128x96.py), the decoder has the 4K
# head's five x2 stages and predicts at half the input (256x192, twice the
# tiny 1K output, as 2048x1536 for 4096x3072 against 1024x768); the even
# letterbox (align=2, output_scale=0.5) puts the training targets at
# 256x192, and the test un-letterboxes the half-size prediction and scores it
# at the original size. Trains on the bundled synthetic scenes
# (tests/data/dense_sample, 256x192) in seconds: a smoke test, not a model to
# use.
#   python tools/train.py configs/normal/sapiens2-tiny-4k_1xb2-30_densesample-512x384.py
default_scope = 'sapiens2_mm'
_base_ = ['../_base_/default_runtime.py']
height, width = 512, 384
data_root = 'tests/data/dense_sample/'

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
        use_tokenizer=True,
        patch_size=16,
        final_norm=True,
        with_cls_token=True,
        out_type='featmap',
        out_indices=[-1],
        init_cfg=None),
    decode_head=dict(
        type='NormalHead',
        in_channels=64,
        upsample_channels=(32, 16, 16, 8, 8),
        conv_out_channels=(8, 8),
        conv_kernel_sizes=(3, 3),
        # the official terms: cosine x10, L1 x1, gradient x10
        loss_decode=[
            dict(type='NormalCosineSimilarityLoss', loss_weight=10.0),
            dict(type='MaskedL1Loss', loss_weight=1.0),
            dict(type='NormalGradL1Loss', loss_weight=10.0),
        ]),
    train_cfg=dict(),
    test_cfg=dict(mode='whole', flip_test=False))

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseRandomFlip', prob=0.5),  # also negates normal x
    # letterbox; the targets straight to the 256x192 output frame
    dict(type='DenseResizePad', height=height, width=width, align=2,
         output_scale=0.5),
    dict(type='NormalGenerateTarget'),
    dict(type='PackDenseInputs'),
]
# The image is letterboxed, the targets keep the original size (the
# half-size prediction is un-letterboxed and scored there).
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False, align=2),
    dict(type='DenseToOutputSize', scale=0.5, resize_targets=False),
    dict(type='NormalGenerateTarget'),
    dict(type='PackDenseInputs', test_mode=True),
]
train_dataloader = dict(
    batch_size=2, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(type='NormalDataset', data_root=data_root,
                 pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4, num_workers=0, persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type='NormalDataset', data_root=data_root, test_mode=True,
                 pipeline=test_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(type='NormalMetric')
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
