# Sapiens2 top-down heatmap pose model (docs/pose.md) in mmpose's
# TopdownPoseEstimator. The dataset base sets the keypoint count, the codec
# (head.decoder) and the flip test; leaf configs set arch and head channels.
model = dict(
    type='mmpose.TopdownPoseEstimator',
    data_preprocessor=dict(
        type='mmpose.PoseDataPreprocessor',
        mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True),
    backbone=dict(
        type='Sapiens2', arch='sapiens2_1b', img_size=(1024, 768),
        patch_size=16, final_norm=True, use_tokenizer=False,
        with_cls_token=True, out_type='featmap'),
    head=dict(
        type='PoseHeatmapHead', in_channels=1536, out_channels=308,
        deconv_out_channels=(1536, 1024), deconv_kernel_sizes=(4, 4),
        conv_out_channels=(768, 512, 256), conv_kernel_sizes=(1, 1, 1),
        loss=dict(type='mmpose.KeypointMSELoss', use_target_weight=True,
                  loss_weight=10.0)),
    test_cfg=dict(flip_test=True, flip_mode='heatmap', shift_heatmap=False))
