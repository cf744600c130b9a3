# Sapiens2-1b surface normals, 8 GPUs x 7, 40k iterations at
# 1024x768: the official recipe: FSDP
# (configs/_base_/strategies/fsdp_bf16.py) with bf16 parameters and bf16
# autocast, activation checkpointing. tools/dist_train.sh THIS_CONFIG 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-normal.py',
    '../_base_/datasets/normal-1024x768.py',
    '../_base_/schedules/dense_adamw-poly-40k.py',
    '../_base_/strategies/fsdp_bf16.py',
]
pretrained = 'checkpoints/sapiens2_1b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_1b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=1536))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=7)
# The official global batch is 8 x 7; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=56)
