# Sapiens2 backbone + official PointmapHead (canonical pointmap + scale branch)
# in a DenseEstimator (no neck). Leaf configs set backbone.arch / init_cfg and
# the head's channels.
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
        type='PointmapHead',
        in_channels=1536,
        upsample_channels=(1536, 768, 512, 256),
        conv_out_channels=(64, 32, 16),
        conv_kernel_sizes=(3, 3, 3),
        scale_conv_out_channels=(1536, 512, 128),
        scale_conv_kernel_sizes=(1, 1, 1),
        # 128 channels x 8 x 6 after three stride-2 convs on the 64x48 grid.
        scale_final_layer=(6144, 512, 128, 1),
        # Adaptive pool to 8x6 before the flatten: the identity at 1024x768
        # (official weights and outputs unchanged), any input size works.
        # None is the official layout.
        scale_pool_size=(8, 6),
        canonical_focal_length=768.0,
        scale_guard='error',  # or 'clamp': predicted scales <= 0
        # official demo: 4 x 3x3 Gaussian blur before enlarging to a larger
        # photo ('none': only the bilinear resize)
        resize_smoothing='official',
        loss_decode=[
            dict(type='PointmapL1Loss', loss_weight=2.0),
            dict(type='PointmapMultiscaleL1Loss', loss_weight=1.0,
                 scale_factor=2),
            dict(type='PointmapSiLogLoss', loss_weight=1.0),
            dict(type='PointmapIntrinsicsConsistencyLoss', loss_weight=1.0),
            dict(type='PointmapShiftInvariantL1Loss', loss_weight=1.0),
            dict(type='PointmapNormalLoss', loss_weight=2.0),
            dict(type='PointmapScaleL1Loss', loss_weight=4.0),
        ]),
    train_cfg=dict(),
    test_cfg=dict(mode='whole', flip_test=False))
