# Sapiens2-0.8b body-part segmentation (29 classes), 8 GPUs x 5, 30k
# iterations at 1024x768: the official recipe (DDP fp32 (its bf16 line is commented out officially)).
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-seg29.py',
    '../_base_/datasets/seg29-1024x768.py',
    '../_base_/schedules/seg_adamw-poly-30k.py',
]
pretrained = 'checkpoints/sapiens2_0.8b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.8b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(in_channels=1280))
optim_wrapper = dict(
    paramwise_cfg=dict(num_layers=32, layer_decay_rate=0.85),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=5)
# The official global batch is 8 x 5; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=40)
