# Sapiens2-1b pretraining at 1024x768 on an image folder (set data_root).
#   tools/dist_train.sh configs/pretrain/sapiens2-1b_pretrain-1024x768.py 8
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
    backbone=dict(arch='sapiens2_1b'),
    neck=dict(in_channels=1536),
    dino_head=dict(in_channels=1536))
optim_wrapper = dict(paramwise_cfg=dict(num_layers=40))
# 16 images per GPU (32 leave under 1 GB of an 80 GB GPU by the estimate:
# python tools/analysis_tools/estimate_memory.py THIS_CONFIG); the global
# batch of 1024 the schedule's lr is set for is 64 GPUs x 16.
train_dataloader = dict(batch_size=16)
