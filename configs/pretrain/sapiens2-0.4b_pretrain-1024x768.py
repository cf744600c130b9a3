# Sapiens2-0.4b pretraining at 1024x768 on an image folder (set data_root).
#   tools/dist_train.sh configs/pretrain/sapiens2-0.4b_pretrain-1024x768.py 8
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
    backbone=dict(arch='sapiens2_0.4b'),
    neck=dict(in_channels=1024),
    dino_head=dict(in_channels=1024))
optim_wrapper = dict(paramwise_cfg=dict(num_layers=24))
