# mmseg's SegFormer-B0 (segformer_mit-b0_8xb2-160k_ade20k-512x512, unchanged
# apart from the lines below) at 128x96 with 29 classes, without the ImageNet
# pretraining, trained and tested on the bundled body-part sample like
# configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py (same data, pipelines,
# flip test and metric; mmseg's plain cross-entropy, no class weights).
#   python tools/train.py configs/baselines/seg/segformer_mit-b0_1xb2-30_seg29sample-128x96.py
_base_ = [
    'mmseg::segformer/segformer_mit-b0_8xb2-160k_ade20k-512x512.py',
    '../../_base_/datasets/seg29_sample.py',
]
custom_imports = dict(imports=['sapiens2_mm'], allow_failed_imports=False)
norm_cfg = dict(type='BN', requires_grad=True)  # SyncBN needs a process group
model = dict(
    data_preprocessor=dict(size=(128, 96)),
    backbone=dict(init_cfg=None),
    decode_head=dict(num_classes=29, norm_cfg=norm_cfg))
train_dataloader = dict(_delete_=True,
                        **_base_.seg29_sample_train_dataloader)
val_dataloader = dict(_delete_=True, **_base_.seg29_sample_test_dataloader)
test_dataloader = val_dataloader
val_evaluator = dict(_delete_=True, **_base_.seg29_sample_evaluator)
test_evaluator = val_evaluator
tta_model = dict(_delete_=True, **_base_.seg29_sample_tta_model)
tta_pipeline = _base_.seg29_sample_tta_pipeline
max_iters = 30
optim_wrapper = dict(optimizer=dict(lr=3e-3))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=False, begin=0, end=5),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False, begin=5,
         end=max_iters),
]
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
default_hooks = dict(logger=dict(interval=10),
                     checkpoint=dict(interval=max_iters, max_keep_ckpts=1))
