# mmpose's HRNet-W48 model (td-hm_hrnet-w48_8xb32-210e_coco-256x192) in
# sapiens2_mm's scope (upstream types prefixed), for the real-data baselines:
# the leaf sets head.out_channels and head.decoder (the dataset base's codec).
# The flip test is the Sapiens2 one: the UDP codec needs no heatmap shift.
model = dict(
    type='mmpose.TopdownPoseEstimator',
    data_preprocessor=dict(
        type='mmpose.PoseDataPreprocessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
    backbone=dict(
        type='mmpose.HRNet', in_channels=3,
        extra=dict(
            stage1=dict(num_modules=1, num_branches=1, block='BOTTLENECK',
                        num_blocks=(4, ), num_channels=(64, )),
            stage2=dict(num_modules=1, num_branches=2, block='BASIC',
                        num_blocks=(4, 4), num_channels=(48, 96)),
            stage3=dict(num_modules=4, num_branches=3, block='BASIC',
                        num_blocks=(4, 4, 4), num_channels=(48, 96, 192)),
            stage4=dict(num_modules=3, num_branches=4, block='BASIC',
                        num_blocks=(4, 4, 4, 4),
                        num_channels=(48, 96, 192, 384))),
        init_cfg=dict(type='Pretrained',
                      checkpoint='https://download.openmmlab.com/mmpose/'
                      'pretrain_models/hrnet_w48-8ef0771d.pth')),
    head=dict(
        type='mmpose.HeatmapHead', in_channels=48, out_channels=17,
        deconv_out_channels=None,
        loss=dict(type='mmpose.KeypointMSELoss', use_target_weight=True)),
    test_cfg=dict(flip_test=True, flip_mode='heatmap', shift_heatmap=False))
