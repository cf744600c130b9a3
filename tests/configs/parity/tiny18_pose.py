# The tiny18 pose estimator of tests/data/official_parity/tiny18_pose.safetensors
# (official PoseTopdownEstimator: backbone + PoseHeatmapHead, 308 keypoints).
default_scope = 'sapiens2_mm'
tiny18_arch = dict(embed_dims=32, num_layers=18, num_heads=4,
                   feedforward_channels=128, num_tokenizer_layers=2)
model = dict(
    type='mmpose.TopdownPoseEstimator',
    data_preprocessor=dict(
        type='mmpose.PoseDataPreprocessor',
        mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True),
    backbone=dict(
        type='Sapiens2', arch=tiny18_arch, img_size=(128, 96), patch_size=16,
        final_norm=True, use_tokenizer=False, with_cls_token=True,
        out_type='featmap', init_cfg=None),
    head=dict(
        type='PoseHeatmapHead', in_channels=32, out_channels=308,
        deconv_out_channels=(32, 32), deconv_kernel_sizes=(4, 4),
        conv_out_channels=(32, 32, 16), conv_kernel_sizes=(1, 1, 1),
        loss=dict(type='mmpose.KeypointMSELoss', use_target_weight=True,
                  loss_weight=10.0),
        decoder=dict(type='Sapiens2UDPHeatmap', input_size=(96, 128),
                     heatmap_size=(24, 32), sigma=1.5)),
    test_cfg=dict(flip_test=True, shift_heatmap=False))
input_shape = (1, 3, 128, 96)
