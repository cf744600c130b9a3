# Sapiens2 backbone + official SegHead in mmseg's EncoderDecoder (no neck).
# Leaf configs set backbone.arch / init_cfg and decode_head.in_channels.
class_weight = [0.1, 10, 10, 3, 2, 4, 4, 2, 2, 6, 10, 3, 3, 1, 4, 4, 2, 2, 6, 10,
                3, 3, 1, 1, 10, 10, 10, 10, 10]  # seg29.json class_weight
data_preprocessor = dict(
    type='mmseg.SegDataPreProcessor',
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    bgr_to_rgb=True,
    size=(1024, 768),  # (H, W); training batches are already this size
    pad_val=0,
    seg_pad_val=255)
model = dict(
    type='mmseg.EncoderDecoder',
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
        type='SegHead',
        in_channels=1536,
        num_classes=29,
        deconv_out_channels=(512, 256, 128, 64),
        deconv_kernel_sizes=(4, 4, 4, 4),
        conv_out_channels=(64, 64),
        conv_kernel_sizes=(1, 1),
        ignore_index=255,
        align_corners=False,
        loss_decode=[
            # Per-pixel class-weighted CE; reduction 'none' and the runner's
            # mean give the official "average over all pixels" (mmseg's
            # 'mean' would divide by the summed class weights instead).
            dict(type='mmseg.CrossEntropyLoss', loss_name='loss_ce',
                 class_weight=class_weight, reduction='none',
                 loss_weight=1.0),
            dict(type='SegDiceLoss', loss_name='loss_dice', loss_weight=1.0),
        ]),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
