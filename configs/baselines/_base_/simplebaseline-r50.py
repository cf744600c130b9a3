# mmpose's SimpleBaseline ResNet-50 model (td-hm_res50_8xb64-210e_coco-256x192)
# in sapiens2_mm's scope (upstream types prefixed), for the real-data baselines:
# the leaf sets head.out_channels and head.decoder (the dataset base's codec).
# The flip test is the Sapiens2 one: the UDP codec needs no heatmap shift.
model = dict(
    type='mmpose.TopdownPoseEstimator',
    data_preprocessor=dict(
        type='mmpose.PoseDataPreprocessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
    backbone=dict(
        type='mmpose.ResNet', depth=50,
        init_cfg=dict(type='Pretrained',
                      checkpoint='torchvision://resnet50')),
    head=dict(
        type='mmpose.HeatmapHead', in_channels=2048, out_channels=17,
        loss=dict(type='mmpose.KeypointMSELoss', use_target_weight=True)),
    test_cfg=dict(flip_test=True, flip_mode='heatmap', shift_heatmap=False))
