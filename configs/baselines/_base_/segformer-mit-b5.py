# mmseg's SegFormer MiT-B5 model (segformer_mit-b5_8xb2-160k_ade20k-640x640,
# ImageNet-pretrained MiT) for the 29 body-part classes at 1024x768, in
# sapiens2_mm's scope (upstream types prefixed); mmseg's plain cross-entropy.
norm_cfg = dict(type='SyncBN', requires_grad=True)
model = dict(
    type='mmseg.EncoderDecoder',
    data_preprocessor=dict(
        type='mmseg.SegDataPreProcessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True, size=(1024, 768),
        pad_val=0, seg_pad_val=255),
    backbone=dict(
        type='mmseg.MixVisionTransformer', in_channels=3, embed_dims=64,
        num_stages=4, num_layers=[3, 6, 40, 3], num_heads=[1, 2, 5, 8],
        patch_sizes=[7, 3, 3, 3], sr_ratios=[8, 4, 2, 1],
        out_indices=(0, 1, 2, 3), mlp_ratio=4, qkv_bias=True, drop_rate=0.0,
        attn_drop_rate=0.0, drop_path_rate=0.1,
        init_cfg=dict(type='Pretrained',
                      checkpoint='https://download.openmmlab.com/'
                      'mmsegmentation/v0.5/pretrain/segformer/'
                      'mit_b5_20220624-658746d9.pth')),
    decode_head=dict(
        type='mmseg.SegformerHead', in_channels=[64, 128, 320, 512],
        in_index=[0, 1, 2, 3], channels=768, dropout_ratio=0.1,
        num_classes=29, norm_cfg=norm_cfg, align_corners=False,
        loss_decode=dict(type='mmseg.CrossEntropyLoss', use_sigmoid=False,
                         loss_weight=1.0)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
# mmseg's SegFormer optimizer: AdamW 6e-5, head lr x10, no decay on norms
segformer_optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='AdamW', lr=6e-5, betas=(0.9, 0.999),
                   weight_decay=0.01),
    paramwise_cfg=dict(custom_keys={'pos_block': dict(decay_mult=0.0),
                                    'norm': dict(decay_mult=0.0),
                                    'head': dict(lr_mult=10.0)}))
