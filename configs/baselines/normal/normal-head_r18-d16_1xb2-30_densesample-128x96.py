# Normal baseline with an upstream CNN: mmseg's ResNetV1c-18 (the DeepLab
# backbone) dilated to output stride 16 (the stride the Sapiens2 head
# decodes), without pretraining, under the same Sapiens2 normal head, losses,
# data and metric as configs/normal/sapiens2-tiny_1xb2-30_densesample-128x96.py
# (docs/baselines.md: upstream has no normal model).
#   python tools/train.py configs/baselines/normal/normal-head_r18-d16_1xb2-30_densesample-128x96.py
_base_ = ['../../normal/sapiens2-tiny_1xb2-30_densesample-128x96.py']
model = dict(
    backbone=dict(
        _delete_=True, type='mmseg.ResNetV1c', depth=18, out_indices=(3, ),
        strides=(1, 2, 2, 1), dilations=(1, 1, 1, 2),
        norm_cfg=dict(type='BN', requires_grad=True), contract_dilation=True,
        init_cfg=None),
    decode_head=dict(in_channels=512))
