# Sapiens2-0.4b albedo, 16 GPUs x 10, 20k iterations at 1024x768: the official
# recipe's global batch of 160 and schedule (official: 8 GPUs x 20, FSDP bf16;
# here DDP with bf16 autocast). 20 per GPU does not fit an 80 GB GPU even with
# FSDP (the albedo decoder keeps about 3.1 GB of activations per image at
# 1024x768; python tools/analysis_tools/estimate_memory.py THIS_CONFIG --batch
# 20), so the same global batch runs as 16 x 10 (nothing in the model depends
# on the per-GPU batch).
#   NNODES=2 NODE_RANK=0|1 MASTER_ADDR=HOST tools/dist_train.sh THIS_CONFIG 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-albedo.py',
    '../_base_/datasets/albedo-1024x768.py',
    '../_base_/schedules/dense_adamw-poly-20k.py',
]
pretrained = 'checkpoints/sapiens2_0.4b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.4b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=1024))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    paramwise_cfg=dict(num_layers=24, layer_decay_rate=0.8),
    clip_grad=dict(max_norm=2.0))
train_dataloader = dict(batch_size=10)
# The official global batch is 8 x 20 = 16 x 10; lr is not rescaled
# automatically.
auto_scale_lr = dict(enable=False, base_batch_size=160)
