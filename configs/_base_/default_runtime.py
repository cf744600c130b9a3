# Runtime shared by every sapiens2_mm config: scope, hooks, environment, logging.
default_scope = 'sapiens2_mm'
custom_imports = dict(imports=['sapiens2_mm'], allow_failed_imports=False)

default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=10),
    param_scheduler=dict(type='ParamSchedulerHook'),
    checkpoint=dict(type='AtomicCheckpointHook', interval=1000, by_epoch=False,
                    max_keep_ckpts=3, save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
)

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    dist_cfg=dict(backend='nccl'),
)

vis_backends = [dict(type='LocalVisBackend')]
log_processor = dict(type='LogProcessor', window_size=10, by_epoch=False)
log_level = 'INFO'
load_from = None
resume = False
randomness = dict(seed=0, diff_rank_seed=True)
