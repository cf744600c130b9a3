# Sapiens2-5b albedo, 8 GPUs x 3, 40k iterations at
# 1024x768: the official recipe: FSDP
# (configs/_base_/strategies/fsdp_bf16.py) with bf16 parameters and bf16
# autocast, activation checkpointing. tools/dist_train.sh THIS_CONFIG 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-albedo.py',
    '../_base_/datasets/albedo-1024x768.py',
    '../_base_/schedules/dense_adamw-poly-40k.py',
    '../_base_/strategies/fsdp_bf16.py',
]
pretrained = 'checkpoints/sapiens2_5b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_5b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=2432,
        upsample_channels=(1536, 768, 512, 256)))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
    paramwise_cfg=dict(num_layers=56, layer_decay_rate=0.94),
    clip_grad=dict(max_norm=4.0))
train_cfg = dict(val_interval=40000)  # official val interval
train_dataloader = dict(batch_size=3)
# The official global batch is 8 x 3; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=24)
# Sharded checkpoints: each rank writes and reads its own shards (a 'full'
# checkpoint gathers about 61 GB on rank 0 and every rank reads it back on
# resume). For tools/test.py or the converters, consolidate first:
# tools/model_converters/consolidate_sharded_checkpoint.py (docs/large_models.md).
strategy = dict(state_dict_cfg='sharded')
