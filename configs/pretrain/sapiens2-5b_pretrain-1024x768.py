# Sapiens2-5b pretraining at 1024x768 on an image folder (set data_root).
#   tools/dist_train.sh configs/pretrain/sapiens2-5b_pretrain-1024x768.py 8
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pretrain.py',
    '../_base_/datasets/pretrain_image_folder-1024x768.py',
    '../_base_/schedules/pretrain_adamw-cosine.py',
    '../_base_/strategies/fsdp_bf16.py',
]
# FSDP (FlexibleRunner): one unit per Sapiens2 block, bf16 parameters. The EMA
# teacher is a frozen copy inside the wrapped model and is sharded with it.
model = dict(
    backbone=dict(arch='sapiens2_5b'),
    neck=dict(in_channels=2432),
    dino_head=dict(in_channels=2432))
optim_wrapper = dict(paramwise_cfg=dict(num_layers=56))
# 16 images per GPU (32 do not fit an 80 GB GPU: python
# tools/analysis_tools/estimate_memory.py THIS_CONFIG); the global batch of
# 1024 the schedule's lr is set for is 64 GPUs x 16.
train_dataloader = dict(batch_size=16)
# Sharded checkpoints: each rank writes and reads its own shards (a 'full'
# checkpoint gathers about 61 GB on rank 0 and every rank reads it back on
# resume). For tools/test.py or the converters, consolidate first:
# tools/model_converters/consolidate_sharded_checkpoint.py (docs/large_models.md).
strategy = dict(state_dict_cfg='sharded')
