# The tiny seg workflow with the large-model optimizer settings: layer-wise lr
# decay, weight decay 0.1 and gradient clipping at a norm the tiny model's
# gradients exceed, dropout off. Trained with DDP, it is the reference that
# tiny_seg_fsdp.py (the same under FSDP) must reproduce.
#   SAPIENS2_WORKFLOW_DATA=/tmp/seg tools/dist_train.sh THIS_FILE 2
_base_ = ['./tiny_seg_workflow.py']
model = dict(decode_head=dict(dropout_ratio=0.0))
optim_wrapper = dict(
    constructor='Sapiens2LayerDecayOptimWrapperConstructor',
    paramwise_cfg=dict(layer_decay_rate=0.8),
    clip_grad=dict(max_norm=0.05))
train_cfg = dict(max_iters=4, val_interval=4)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=2),
    dict(type='PolyLR', eta_min=0.0, power=1.0, by_epoch=False, begin=2,
         end=8),
]
default_hooks = dict(checkpoint=dict(interval=2, max_keep_ckpts=2))
