# The tiny18 PointmapEstimator of tests/data/official_parity/tiny18_pointmap.safetensors
# as a DenseEstimator (state_dict prefixes backbone. / decode_head., as official).
# Load the official weights with init_model(this_file, PATH) or
# load_state_dict_checked(model, read_checkpoint(PATH)).
default_scope = 'sapiens2_mm'
tiny18_arch = dict(embed_dims=32, num_layers=18, num_heads=4,
                   feedforward_channels=128, num_tokenizer_layers=2)
model = dict(
    type='DenseEstimator',
    data_preprocessor=dict(
        type='mmengine.ImgDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_size_divisor=1,
        pad_value=0),
    backbone=dict(
        type='Sapiens2',
        arch=tiny18_arch,
        img_size=(256, 192),
        patch_size=16,
        final_norm=True,
        use_tokenizer=False,
        with_cls_token=True,
        out_type='featmap',
        out_indices=[-1],
        init_cfg=None),
    decode_head=dict(
        type='PointmapHead',
        in_channels=32,
        upsample_channels=(32, 16, 16, 8),
        conv_out_channels=(8, 8, 4),
        conv_kernel_sizes=(3, 3, 3),
        scale_conv_out_channels=(32, 16, 8),
        scale_conv_kernel_sizes=(1, 1, 1),
        scale_final_layer=(32, 16, 8, 1)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole', flip_test=False))
input_shape = (1, 3, 256, 192)
