# mmpose's SimpleBaseline (td-hm_res50_8xb64-210e_coco-256x192, unchanged apart
# from the lines below) shrunk to ResNet-18 at 128x96 and trained on the
# bundled COCO sample like configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py.
#   python tools/train.py configs/baselines/pose/td-hm_res18_1xb12-300_cocosample-128x96.py
_base_ = [
    'mmpose::body_2d_keypoint/topdown_heatmap/coco/'
    'td-hm_res50_8xb64-210e_coco-256x192.py',
    '../../_base_/datasets/coco_sample.py',
]
custom_imports = dict(imports=['sapiens2_mm'], allow_failed_imports=False)
codec = dict(type='MSRAHeatmap', input_size=(96, 128), heatmap_size=(24, 32),
             sigma=1.5)
model = dict(
    backbone=dict(depth=18, init_cfg=None),
    head=dict(in_channels=512, decoder=codec))
train_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    dict(type='RandomFlip', direction='horizontal'),
    dict(type='TopdownAffine', input_size=codec['input_size']),
    dict(type='GenerateTarget', encoder=codec),
    dict(type='PackPoseInputs'),
]
val_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    dict(type='TopdownAffine', input_size=codec['input_size']),
    dict(type='PackPoseInputs'),
]
train_dataloader = dict(
    _delete_=True, **_base_.coco_sample_train_loader,
    dataset=dict(**_base_.coco_sample_dataset, pipeline=train_pipeline))
val_dataloader = dict(
    _delete_=True, **_base_.coco_sample_test_loader,
    dataset=dict(**_base_.coco_sample_dataset, test_mode=True,
                 pipeline=val_pipeline))
test_dataloader = val_dataloader
val_evaluator = _base_.coco_sample_evaluator
test_evaluator = val_evaluator
max_iters = 300
optim_wrapper = dict(optimizer=dict(lr=2e-3))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=20),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False, begin=20,
         end=max_iters),
]
train_cfg = dict(_delete_=True, type='IterBasedTrainLoop', max_iters=max_iters,
                 val_interval=max_iters)
default_hooks = dict(
    logger=dict(interval=20),
    checkpoint=dict(interval=max_iters, by_epoch=False, save_best=None,
                    max_keep_ckpts=1))
log_processor = dict(by_epoch=False)
auto_scale_lr = dict(enable=False)
