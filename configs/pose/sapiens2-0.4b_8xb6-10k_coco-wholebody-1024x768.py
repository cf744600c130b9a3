# Sapiens2-0.4b top-down pose, COCO-WholeBody-133 keypoints at 1024x768, 8 GPUs x 6,
# 10k iterations: the official Sapiens2 recipe. Fine-tunes from the
# pretrain checkpoint; to evaluate an official task checkpoint see docs/pose.md.
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pose.py',
    '../_base_/datasets/coco-wholebody-1024x768.py',
    '../_base_/schedules/pose_adamw-poly-10k.py',
]
pretrained = 'checkpoints/sapiens2_0.4b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.4b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    head=dict(out_channels=133, decoder={{_base_.codec}},
              in_channels=1024, deconv_out_channels=(1024, 768),
              conv_out_channels=(512, 512, 256)))
optim_wrapper = dict(
    paramwise_cfg=dict(num_layers=24, layer_decay_rate=0.8),
    clip_grad=dict(max_norm=2.0))
train_dataloader = dict(batch_size=6)
# The official global batch is 8 x 6; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=48)
