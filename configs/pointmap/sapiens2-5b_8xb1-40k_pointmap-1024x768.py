# Sapiens2-5b pointmaps (+ metric scale), 8 GPUs x 1, 40k iterations at
# 1024x768: the official recipe: FSDP
# (configs/_base_/strategies/fsdp_fp32.py) in fp32, activation checkpointing.
# tools/dist_train.sh THIS_CONFIG 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pointmap.py',
    '../_base_/datasets/pointmap-1024x768.py',
    '../_base_/schedules/dense_adamw-poly-40k.py',
    '../_base_/strategies/fsdp_fp32.py',
]
pretrained = 'checkpoints/sapiens2_5b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_5b',
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=2432,
        upsample_channels=(1536, 768, 768, 768),
        conv_out_channels=(128, 64, 32)))
optim_wrapper = dict(
    optimizer=dict(lr=1e-4),
    paramwise_cfg=dict(num_layers=56, layer_decay_rate=0.94),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=1)
# The official global batch is 8 x 1; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=8)
# Sharded checkpoints: each rank writes and reads its own shards (a 'full'
# checkpoint gathers about 61 GB on rank 0 and every rank reads it back on
# resume). For tools/test.py or the converters, consolidate first:
# tools/model_converters/consolidate_sharded_checkpoint.py (docs/large_models.md).
strategy = dict(state_dict_cfg='sharded')
