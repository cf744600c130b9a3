# SegFormer MiT-B5 (mmseg segformer_mit-b5_8xb2-160k_ade20k-640x640, ImageNet
# MiT) on the 29 body-part classes with the data, pipelines (1024x768), flip
# test and official SegIoUMetric of
# configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py, mmseg's SegFormer
# optimizer (AdamW 6e-5, head lr x10) on the Sapiens2 20k-iteration schedule
# and mmseg's plain cross-entropy (not the Sapiens2 class weights and dice).
# Batch 2 per GPU as upstream. docs/baselines.md.
#   tools/dist_train.sh configs/baselines/seg/segformer_mit-b5_8xb2-20k_seg29-1024x768.py 8
_base_ = [
    '../../_base_/default_runtime.py',
    '../_base_/segformer-mit-b5.py',
    '../../_base_/datasets/seg29-1024x768.py',
    '../../_base_/schedules/seg_adamw-poly-20k.py',
]
optim_wrapper = dict(_delete_=True, **_base_.segformer_optim_wrapper)
train_dataloader = dict(batch_size=2)
auto_scale_lr = dict(enable=False, base_batch_size=16)
