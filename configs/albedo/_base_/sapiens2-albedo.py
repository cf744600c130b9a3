# Sapiens2 backbone + official AlbedoHead (channel-RMSNorm decoder) in a
# DenseEstimator (no neck). Leaf configs set backbone.arch / init_cfg and the
# head's channels.
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
        type='AlbedoHead',
        in_channels=1536,
        upsample_channels=(768, 512, 256, 128),
        conv_out_channels=(64, 32, 16),
        conv_kernel_sizes=(3, 3, 3),
        # pred_albedo is clamped to [0, 1]; pred_albedo_raw keeps the raw map.
        clamp_output=True,
        # official demo order: clamp at network resolution, then crop and
        # resize to the photo ('after_resize': clamp the resized map)
        clamp='before_resize',
        loss_decode=[
            dict(type='MaskedL1Loss', loss_weight=2.0),
            dict(type='AlbedoGradL1Loss', loss_weight=2.0),
            dict(type='AlbedoChromaticityL1Loss', loss_weight=1.0),
        ]),
    train_cfg=dict(),
    test_cfg=dict(mode='whole', flip_test=False))
