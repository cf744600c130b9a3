# Fully sharded data parallel (torch FSDP) with bf16 compute, for the 1B / 5B
# models. Add it to a task config's _base_ list and launch as usual:
#   _base_ = ['./sapiens2-1b_8xb7-20k_sapiens308-1024x768.py',
#             '../_base_/strategies/fsdp_bf16.py']
#   tools/dist_train.sh THAT_CONFIG 8
# tools/train.py switches to mmengine's FlexibleRunner because `strategy` is
# set. Each Sapiens2 block is one FSDP unit (parameters gathered per block).
# Activation checkpointing: model.backbone.with_cp=True (per block), or set
# strategy.activation_checkpointing below. Gradient accumulation:
# optim_wrapper.accumulative_counts=N. See docs/large_models.md.
runner_type = 'FlexibleRunner'
strategy = dict(
    type='FSDPStrategy',
    model_wrapper=dict(
        auto_wrap_policy=dict(type='sapiens2_block_wrap_policy'),
        # keep parameter names: the layer-decay optimizer groups by name
        use_orig_params=True,
        sharding_strategy='FULL_SHARD',
        mixed_precision=dict(param_dtype='bfloat16', reduce_dtype='bfloat16',
                             buffer_dtype=None),
        limit_all_gathers=True),
    # 'full': one consolidated checkpoint on rank 0, loadable anywhere
    # (tools/test.py, init_model); 'local' writes one shard per rank (faster).
    state_dict_cfg='full',
    activation_checkpointing=None,
)
