# A tiny Sapiens2 pose model that overfits the 12 labelled people (of 14) of the bundled COCO
# sample (tests/data/coco_sample) on a CPU: checks that codec, transforms, head,
# flip test, decoding, crop->image mapping and mmpose's CocoMetric agree.
# Data, loaders and metric: ../_base_/datasets/coco_sample.py.
# Run: python tools/train.py configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py
_base_ = ['../_base_/default_runtime.py', './_base_/sapiens2-pose.py',
          '../_base_/datasets/coco_sample.py']
codec = dict(type='Sapiens2UDPHeatmap', input_size=(96, 128),
             heatmap_size=(24, 32), sigma=1.5, blur_kernel_size=7,
             decode_mapping='consistent')
tiny_arch = dict(embed_dims=64, num_layers=4, num_heads=4,
                 feedforward_channels=256, num_tokenizer_layers=2)
model = dict(
    backbone=dict(arch=dict(_delete_=True, **tiny_arch), img_size=(128, 96),
                  init_cfg=None),
    head=dict(in_channels=64, out_channels=17, deconv_out_channels=(32, 16),
              conv_out_channels=(16, ), conv_kernel_sizes=(1, ),
              decoder=codec,
              # mmpose's heatmap-head init: the official Kaiming init of the
              # final 1x1 conv starts from large heatmaps that this tiny model
              # needs hundreds of iterations to shrink (measured: PCK 0.01 vs
              # 0.9 after 100 steps on the sample).
              init_cfg=dict(type='Normal', layer=['Conv2d', 'ConvTranspose2d'],
                            std=0.001)))

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='mmpose.GetBBoxCenterScale', padding=1.25),
    dict(type='mmpose.RandomFlip', direction='horizontal', prob=0.5),
    dict(type='Sapiens2TopdownAffine', input_size=codec['input_size']),
    dict(type='mmpose.GenerateTarget', encoder=codec),
    dict(type='mmpose.PackPoseInputs'),
]
val_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='mmpose.GetBBoxCenterScale', padding=1.25),
    dict(type='Sapiens2TopdownAffine', input_size=codec['input_size']),
    dict(type='mmpose.PackPoseInputs'),
]
dataset = _base_.coco_sample_dataset
train_dataloader = dict(**_base_.coco_sample_train_loader,
                        dataset=dict(**dataset, pipeline=train_pipeline))
val_dataloader = dict(
    **_base_.coco_sample_test_loader,
    dataset=dict(**dataset, test_mode=True, pipeline=val_pipeline))
test_dataloader = val_dataloader
val_evaluator = _base_.coco_sample_evaluator
test_evaluator = val_evaluator

max_iters = 300
optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=2e-3, betas=(0.9, 0.999),
                   weight_decay=0.0),
    clip_grad=dict(max_norm=4.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=20),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False, begin=20,
         end=max_iters),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters,
                 val_interval=max_iters)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
default_hooks = dict(
    logger=dict(interval=20),
    checkpoint=dict(interval=max_iters, save_last=True, max_keep_ckpts=1))
randomness = dict(seed=0, deterministic=False)
