# DeepSpeed ZeRO-3 with bf16, an alternative to FSDP for the 1B / 5B models.
# Needs `pip install deepspeed` (not in requirements: it builds CUDA ops).
#   _base_ = ['./sapiens2-5b_8xb2-20k_sapiens308-1024x768.py',
#             '../_base_/strategies/deepspeed_zero3_bf16.py']
#   tools/dist_train.sh THAT_CONFIG 8
# mmengine's DeepSpeedStrategy wraps the optimizer itself: it needs
# optim_wrapper.type='DeepSpeedOptimWrapper', which the leaf config must set
# (a _base_ snippet cannot change a key another base defines):
#   optim_wrapper = dict(type='DeepSpeedOptimWrapper', optimizer=dict(...))
# Gradient accumulation: strategy.gradient_accumulation_steps.
runner_type = 'FlexibleRunner'
strategy = dict(
    type='DeepSpeedStrategy',
    fp16=None,
    bf16=dict(enabled=True),
    zero_optimization=dict(
        stage=3,
        overlap_comm=True,
        contiguous_gradients=True,
        reduce_bucket_size='auto',
        stage3_prefetch_bucket_size='auto',
        stage3_param_persistence_threshold='auto',
        stage3_gather_16bit_weights_on_model_save=True),
    gradient_clipping=1.0,
    gradient_accumulation_steps=1,
    train_micro_batch_size_per_gpu='auto',
)
