# Sapiens2-0.8b albedo, 8 GPUs x 12, 20k iterations at
# 1024x768: the official recipe (FSDP bf16; here bf16 autocast).
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-albedo.py',
    '../_base_/datasets/albedo-1024x768.py',
    '../_base_/schedules/dense_adamw-poly-20k.py',
]
pretrained = 'checkpoints/sapiens2_0.8b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.8b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=1280))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    paramwise_cfg=dict(num_layers=32, layer_decay_rate=0.85),
    clip_grad=dict(max_norm=4.0))
train_cfg = dict(val_interval=10000)  # official val interval
train_dataloader = dict(batch_size=12)
# The official global batch is 8 x 12; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=96)
