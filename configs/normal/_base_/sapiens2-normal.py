# Sapiens2 backbone + official NormalHead in a DenseEstimator (no neck).
# Leaf configs set backbone.arch / init_cfg and the head's channels.
data_preprocessor = dict(
    type='mmengine.ImgDataPreprocessor',
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    bgr_to_rgb=True,
    pad_size_divisor=1,
    pad_value=0)
model = dict(
    type='DenseEstimator',
    data_preprocessor=data_preprocessor,
    backbone=dict(
        type='Sapiens2',
        arch='sapiens2_1b',
        img_size=(1024, 768),
        patch_size=16,
        final_norm=True,
        use_tokenizer=False,
        with_cls_token=True,
        out_type='featmap',
        out_indices=[-1],
        with_cp=True),  # official: activation checkpointing for dense tasks
    decode_head=dict(
        type='NormalHead',
        in_channels=1536,
        upsample_channels=(768, 512, 256, 128),
        conv_out_channels=(64, 32, 16),
        conv_kernel_sizes=(3, 3, 3),
        # official demo order: unit length at network resolution, then crop
        # and resize, not re-normalized ('after_resize': normalize last)
        normalize='before_resize',
        loss_decode=[
            dict(type='NormalCosineSimilarityLoss', loss_weight=10.0),
            dict(type='MaskedL1Loss', loss_weight=1.0),
            dict(type='NormalGradL1Loss', loss_weight=10.0),
        ]),
    train_cfg=dict(),
    # flip_test=True: also predict the mirrored image and average.
    test_cfg=dict(mode='whole', flip_test=False))
