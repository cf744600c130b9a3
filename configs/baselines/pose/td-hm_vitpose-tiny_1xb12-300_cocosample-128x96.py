# mmpose's ViTPose (td-hm_ViTPose-small_8xb64-210e_coco-256x192, unchanged apart
# from the lines below) shrunk to the Sapiens2-tiny width and depth (64 dims, 4
# layers, 4 heads) at 128x96, without the MAE pretraining, and trained on the
# bundled COCO sample like configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py.
#   python tools/train.py configs/baselines/pose/td-hm_vitpose-tiny_1xb12-300_cocosample-128x96.py
_base_ = [
    'mmpose::body_2d_keypoint/topdown_heatmap/coco/'
    'td-hm_ViTPose-small_8xb64-210e_coco-256x192.py',
    '../../_base_/datasets/coco_sample.py',
]
# sapiens2_mm first: it lets mmpose import on mmcv-lite
custom_imports = dict(imports=[
    'sapiens2_mm', 'mmpose.engine.optim_wrappers.layer_decay_optim_wrapper'])
codec = dict(type='UDPHeatmap', input_size=(96, 128), heatmap_size=(24, 32),
             sigma=1.5)
model = dict(
    backbone=dict(
        arch=dict(embed_dims=64, num_layers=4, num_heads=4,
                  feedforward_channels=256),
        img_size=(128, 96), drop_path_rate=0.0, init_cfg=None),
    head=dict(in_channels=64, deconv_out_channels=(32, 32), decoder=codec))
train_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    dict(type='RandomFlip', direction='horizontal'),
    dict(type='TopdownAffine', input_size=codec['input_size'], use_udp=True),
    dict(type='GenerateTarget', encoder=codec),
    dict(type='PackPoseInputs'),
]
val_pipeline = [
    dict(type='LoadImage'),
    dict(type='GetBBoxCenterScale'),
    dict(type='TopdownAffine', input_size=codec['input_size'], use_udp=True),
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
optim_wrapper = dict(optimizer=dict(lr=2e-3),
                     paramwise_cfg=dict(num_layers=4))
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
