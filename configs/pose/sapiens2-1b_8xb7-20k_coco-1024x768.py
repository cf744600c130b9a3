# Sapiens2-1b top-down pose, COCO-17 keypoints at 1024x768, 8 GPUs x 7,
# 20k iterations: the official Sapiens2 recipe: FSDP
# (configs/_base_/strategies/fsdp_bf16.py) with bf16 parameters and bf16
# autocast. Backbone activation checkpointing is on (off in the official pose
# recipe): without it the batch does not fit an 80 GB GPU (python
# tools/analysis_tools/estimate_memory.py THIS_CONFIG). Fine-tunes from the
# pretrain checkpoint; to evaluate an official task checkpoint see docs/pose.md.
#   tools/dist_train.sh THIS_CONFIG 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pose.py',
    '../_base_/datasets/coco-1024x768.py',
    '../_base_/schedules/pose_adamw-poly-20k.py',
    '../_base_/strategies/fsdp_bf16.py',
]
pretrained = 'checkpoints/sapiens2_1b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_1b',
        with_cp=True,
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
