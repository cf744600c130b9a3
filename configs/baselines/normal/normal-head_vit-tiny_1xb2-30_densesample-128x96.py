# Normal baseline with an upstream ViT: mmpretrain's plain VisionTransformer
# (the backbone of ViTPose and of DPT) at the Sapiens2-tiny width and depth
# (64 dims, 4 layers, 4 heads; learned absolute positions, no RoPE, no
# tokenizer), without pretraining, under the same Sapiens2 normal head,
# losses, data and metric as
# configs/normal/sapiens2-tiny_1xb2-30_densesample-128x96.py. Neither mmseg nor
# mmpose ships a surface-normal (or pointmap) model: mmseg 1.2.2's only depth
# model (VPD) needs Stable Diffusion weights, and its DPT is a segmentation
# head (docs/baselines.md).
#   python tools/train.py configs/baselines/normal/normal-head_vit-tiny_1xb2-30_densesample-128x96.py
_base_ = ['../../normal/sapiens2-tiny_1xb2-30_densesample-128x96.py']
model = dict(backbone=dict(
    _delete_=True, type='mmpretrain.VisionTransformer',
    arch=dict(embed_dims=64, num_layers=4, num_heads=4,
              feedforward_channels=256),
    img_size=(128, 96), patch_size=16, qkv_bias=True, with_cls_token=False,
    out_type='featmap', init_cfg=None))
