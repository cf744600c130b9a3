# Sapiens2-0.4b body-part segmentation (29 classes), 8 GPUs x 12, 20k
# iterations at 1024x768: the official recipe (DDP + bf16).
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-seg29.py',
    '../_base_/datasets/seg29-1024x768.py',
    '../_base_/schedules/seg_adamw-poly-20k.py',
]
pretrained = 'checkpoints/sapiens2_0.4b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.4b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(in_channels=1024))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    paramwise_cfg=dict(num_layers=24, layer_decay_rate=0.8),
    clip_grad=dict(max_norm=2.0))
train_dataloader = dict(batch_size=12)
# The official global batch is 8 x 12; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=96)
