# Fully sharded data parallel (torch FSDP) with bf16 compute, for the 1B / 5B
# models. Add it to a task config's _base_ list and launch as usual:
#   _base_ = ['./sapiens2-1b_8xb7-20k_sapiens308-1024x768.py',
#             '../_base_/strategies/fsdp_bf16.py']
#   tools/dist_train.sh THAT_CONFIG 8
# tools/train.py switches to mmengine's FlexibleRunner because `strategy` is
# set. Each Sapiens2 block is one FSDP unit (parameters gathered per block).
# Sapiens2FSDPStrategy is mmengine's FSDPStrategy with its defects fixed
# (sapiens2_mm/engine/strategies/); the device is the GPU of LOCAL_RANK, or
# the CPU (gloo) on a machine without one (for tests and small experiments).
# Activation checkpointing: model.backbone.with_cp=True (per block), or
# strategy = dict(activation_checkpointing=dict(
#     check_fn='sapiens2_block_checkpoint_fn')) in the leaf config. Gradient
# accumulation: optim_wrapper.accumulative_counts=N. See docs/large_models.md.
runner_type = 'FlexibleRunner'
strategy = dict(
    type='sapiens2_mm.Sapiens2FSDPStrategy',
    model_wrapper=dict(
        auto_wrap_policy=dict(type='sapiens2_block_wrap_policy'),
        # keep parameter names: the layer-decay optimizer groups by name
        use_orig_params=True,
        sharding_strategy='FULL_SHARD',
        mixed_precision=dict(param_dtype='bfloat16', reduce_dtype='bfloat16',
                             buffer_dtype=None),
        limit_all_gathers=True),
    # 'full': one consolidated checkpoint on rank 0, loadable anywhere
    # (tools/test.py, init_model, --resume); 'sharded': a folder in which
    # each rank writes and reads its own shards (for 5B; consolidate with
    # tools/model_converters/consolidate_sharded_checkpoint.py). The model is
    # built on the meta device and initialised one FSDP unit at a time
    # (the strategy's init_on_meta=True).
    state_dict_cfg='full',
    # check_fn=None: off; a dict (not None) so that a leaf config can set it
    activation_checkpointing=dict(check_fn=None),
)
