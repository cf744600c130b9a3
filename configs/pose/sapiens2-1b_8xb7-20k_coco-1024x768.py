# Sapiens2-1b top-down pose, COCO-17 keypoints at 1024x768, 8 GPUs x 7,
# 20k iterations: the official Sapiens2 recipe. Fine-tunes from the
# pretrain checkpoint; to evaluate an official task checkpoint see docs/pose.md.
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pose.py',
    '../_base_/datasets/coco-1024x768.py',
    '../_base_/schedules/pose_adamw-poly-20k.py',
]
pretrained = 'checkpoints/sapiens2_1b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_1b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    head=dict(out_channels=17, decoder={{_base_.codec}},
              in_channels=1536, deconv_out_channels=(1536, 1024),
              conv_out_channels=(768, 512, 256)))
optim_wrapper = dict(
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=7)
# The official global batch is 8 x 7; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=56)
