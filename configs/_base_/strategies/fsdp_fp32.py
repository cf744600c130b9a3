# Fully sharded data parallel in fp32, for the pointmap models: the official
# pointmap recipes train with FSDP and no mixed precision (the pointmap's
# scale and depth lose about 13 % relative in bf16). Everything else is the
# bf16 snippet's: one FSDP unit per Sapiens2 block, FULL_SHARD, names kept,
# consolidated ('full') checkpoints. See docs/large_models.md.
#   _base_ = [..., '../_base_/strategies/fsdp_fp32.py']
#   tools/dist_train.sh THAT_CONFIG 8
_base_ = ['./fsdp_bf16.py']
strategy = dict(model_wrapper=dict(mixed_precision=None))
