# DeepLabV3+ ResNet-101 (mmseg deeplabv3plus_r101-d8, ImageNet ResNetV1c) on
# the 29 body-part classes with the data, pipelines (1024x768), flip test and
# official SegIoUMetric of configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py,
# mmseg's SGD (lr 0.01, momentum 0.9, wd 5e-4) on the Sapiens2 20k-iteration
# schedule and mmseg's plain cross-entropy (not the Sapiens2 class weights and
# dice). Batch 2 per GPU as upstream. docs/baselines.md.
#   tools/dist_train.sh configs/baselines/seg/deeplabv3plus_r101-d8_8xb2-20k_seg29-1024x768.py 8
_base_ = [
    '../../_base_/default_runtime.py',
    '../_base_/deeplabv3plus-r101.py',
    '../../_base_/datasets/seg29-1024x768.py',
    '../../_base_/schedules/seg_adamw-poly-20k.py',
]
optim_wrapper = dict(
    _delete_=True, type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=5e-4))
param_scheduler = [
    dict(type='PolyLR', power=0.9, eta_min=1e-4, by_epoch=False, begin=0,
         end={{_base_.max_iters}}),
]
train_dataloader = dict(batch_size=2)
auto_scale_lr = dict(enable=False, base_batch_size=16)
