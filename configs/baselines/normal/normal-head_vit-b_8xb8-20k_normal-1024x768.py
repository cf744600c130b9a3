# Normal baseline with an upstream ViT-B/16 (mmpretrain's plain
# VisionTransformer, the backbone of DPT and ViTPose; the MAE weights of
# mmpose's ViTPose-B) under the Sapiens2 normal head and losses, with the
# data, pipelines (1024x768) and metric of
# configs/normal/sapiens2-0.4b_8xb20-20k_normal-1024x768.py. Upstream has no
# normal model (docs/baselines.md). Batch 8 per GPU (not measured on a GPU).
#   tools/dist_train.sh configs/baselines/normal/normal-head_vit-b_8xb8-20k_normal-1024x768.py 8
_base_ = [
    '../../_base_/default_runtime.py',
    '../../normal/_base_/sapiens2-normal.py',
    '../../_base_/datasets/normal-1024x768.py',
    '../../_base_/schedules/dense_adamw-poly-20k.py',
]
model = dict(
    backbone=dict(
        _delete_=True, type='mmpretrain.VisionTransformer', arch='base',
        img_size=(1024, 768), patch_size=16, qkv_bias=True,
        drop_path_rate=0.1, with_cls_token=False, out_type='featmap',
        init_cfg=dict(type='Pretrained',
                      checkpoint='https://download.openmmlab.com/mmpose/v1/'
                      'pretrained_models/mae_pretrain_vit_base_20230913.pth')),
    decode_head=dict(in_channels=768))
optim_wrapper = dict(
    _delete_=True, type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='AdamW', lr=5e-4, betas=(0.9, 0.999),
                   weight_decay=0.1),
    clip_grad=dict(max_norm=2.0, norm_type=2))
train_dataloader = dict(batch_size=8)
auto_scale_lr = dict(enable=False, base_batch_size=64)
