# The tiny18 SegEstimator of tests/data/official_parity/tiny18_seg.safetensors
# as an mmseg EncoderDecoder (state_dict prefixes backbone. / decode_head.).
# Load the official weights with --cfg-options load_from=PATH (mmengine) or
# load_state_dict_checked(model, read_checkpoint(PATH)).
default_scope = 'sapiens2_mm'
tiny18_arch = dict(embed_dims=32, num_layers=18, num_heads=4,
                   feedforward_channels=128, num_tokenizer_layers=2)
model = dict(
    type='mmseg.EncoderDecoder',
    data_preprocessor=dict(
        type='mmseg.SegDataPreProcessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_val=0,
        seg_pad_val=255),
    backbone=dict(
        type='Sapiens2',
        arch=tiny18_arch,
        img_size=(128, 96),
        patch_size=16,
        final_norm=True,
        use_tokenizer=False,
        with_cls_token=True,
        out_type='featmap',
        out_indices=[-1],
        init_cfg=None),
    decode_head=dict(
        type='SegHead',
        in_channels=32,
        num_classes=29,
        deconv_out_channels=(32, 16, 16, 8),
        deconv_kernel_sizes=(4, 4, 4, 4),
        conv_out_channels=(8, 8),
        conv_kernel_sizes=(1, 1),
        loss_decode=dict(type='mmseg.CrossEntropyLoss', loss_weight=1.0)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
input_shape = (1, 3, 128, 96)
