# mmseg's DeepLabV3+ ResNet-101 model (deeplabv3plus_r101-d8: ResNetV1c at
# output stride 8, ASPP, FCN auxiliary head 0.4) for the 29 body-part classes
# at 1024x768, in sapiens2_mm's scope (upstream types prefixed); mmseg's plain
# cross-entropy.
norm_cfg = dict(type='SyncBN', requires_grad=True)
model = dict(
    type='mmseg.EncoderDecoder',
    data_preprocessor=dict(
        type='mmseg.SegDataPreProcessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True, size=(1024, 768),
        pad_val=0, seg_pad_val=255),
    pretrained='open-mmlab://resnet101_v1c',
    backbone=dict(
        type='mmseg.ResNetV1c', depth=101, num_stages=4,
        out_indices=(0, 1, 2, 3), dilations=(1, 1, 2, 4),
        strides=(1, 2, 1, 1), norm_cfg=norm_cfg, norm_eval=False,
        style='pytorch', contract_dilation=True),
    decode_head=dict(
        type='mmseg.DepthwiseSeparableASPPHead', in_channels=2048,
        in_index=3, channels=512, dilations=(1, 12, 24, 36),
        c1_in_channels=256, c1_channels=48, dropout_ratio=0.1,
        num_classes=29, norm_cfg=norm_cfg, align_corners=False,
        loss_decode=dict(type='mmseg.CrossEntropyLoss', use_sigmoid=False,
                         loss_weight=1.0)),
    auxiliary_head=dict(
        type='mmseg.FCNHead', in_channels=1024, in_index=2, channels=256,
        num_convs=1, concat_input=False, dropout_ratio=0.1, num_classes=29,
        norm_cfg=norm_cfg, align_corners=False,
        loss_decode=dict(type='mmseg.CrossEntropyLoss', use_sigmoid=False,
                         loss_weight=0.4)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
