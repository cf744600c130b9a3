# mmpose's ViTPose-B model (td-hm_ViTPose-base_8xb64-210e_coco-256x192: plain
# mmpretrain ViT-B/16 from MAE, two deconvs) at 1024x768 in sapiens2_mm's scope
# (upstream types prefixed), for the real-data baselines: the leaf sets
# head.out_channels and head.decoder (the dataset base's codec). The absolute
# position embedding of the 256x192 MAE checkpoint is resized by mmpretrain.
model = dict(
    type='mmpose.TopdownPoseEstimator',
    data_preprocessor=dict(
        type='mmpose.PoseDataPreprocessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
    backbone=dict(
        type='mmpretrain.VisionTransformer', arch='base',
        img_size=(1024, 768), patch_size=16, qkv_bias=True,
        drop_path_rate=0.3, with_cls_token=False, out_type='featmap',
        patch_cfg=dict(padding=2),
        init_cfg=dict(type='Pretrained',
                      checkpoint='https://download.openmmlab.com/mmpose/v1/'
                      'pretrained_models/mae_pretrain_vit_base_20230913.pth')),
    head=dict(
        type='mmpose.HeatmapHead', in_channels=768, out_channels=17,
        deconv_out_channels=(256, 256), deconv_kernel_sizes=(4, 4),
        loss=dict(type='mmpose.KeypointMSELoss', use_target_weight=True)),
    test_cfg=dict(flip_test=True, flip_mode='heatmap', shift_heatmap=False))
# mmpose's layer-wise decay (12 blocks, 0.75) for ViTPose-B; the leaf imports
# mmpose.engine.optim_wrappers.layer_decay_optim_wrapper (custom_imports)
vitpose_optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='AdamW', lr=5e-4, betas=(0.9, 0.999),
                   weight_decay=0.1),
    paramwise_cfg=dict(
        num_layers=12, layer_decay_rate=0.75,
        custom_keys={'bias': dict(decay_multi=0.0),
                     'pos_embed': dict(decay_mult=0.0),
                     'relative_position_bias_table': dict(decay_mult=0.0),
                     'norm': dict(decay_mult=0.0)}),
    constructor='mmpose.LayerDecayOptimWrapperConstructor',
    clip_grad=dict(max_norm=1.0, norm_type=2))
