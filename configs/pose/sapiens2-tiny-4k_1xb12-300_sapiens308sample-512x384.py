# Tiny 4K-shaped Sapiens2 pose model (308 keypoints): the path of the 1B-4K
# config (sapiens2-1b-4k_8xb7-20k_sapiens308-4096x3072.py) at CPU size, on the
# bundled sample converted to 308 keypoints (tests/data/coco_sample, see
# sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py). The tokenizer is on
# (stride 64: a 512x384 crop gives the 8x6 feature map of that tiny 1K
# config), the head has the 4K head's three x2 deconvs and predicts 64x48
# heatmaps, 1/8 of the crop and twice the tiny 1K heatmaps (32x24), as
# 512x384 for a 4096x3072 crop against 256x192. The codec's sigma and DARK
# blur kernel double with the heatmap (1.5 -> 3, 7 -> 13), as 6 -> 12 and
# 11 -> 21 at full size; the 1x1 conv is no wider than the last deconv, as
# the 4K head's (512, 512, 256) after its 512-channel deconv (docs/4k.md).
# Overfits the 12 labelled people on a CPU: a smoke test, not a model to use.
#   python tools/train.py configs/pose/sapiens2-tiny-4k_1xb12-300_sapiens308sample-512x384.py
_base_ = ['../_base_/default_runtime.py', './_base_/sapiens2-pose.py']
data_root = 'tests/data/coco_sample/'
ann_file = 'test_sapiens308.json'
codec = dict(type='Sapiens2UDPHeatmap', input_size=(384, 512),
             heatmap_size=(48, 64), sigma=3, blur_kernel_size=13,
             decode_mapping='consistent')
tiny_arch = dict(embed_dims=64, num_layers=4, num_heads=4,
                 feedforward_channels=256, num_tokenizer_layers=2)
model = dict(
    backbone=dict(arch=dict(_delete_=True, **tiny_arch), img_size=(512, 384),
                  use_tokenizer=True, init_cfg=None),
    head=dict(in_channels=64, out_channels=308,
              deconv_out_channels=(32, 16, 8), deconv_kernel_sizes=(4, 4, 4),
              conv_out_channels=(8, ), conv_kernel_sizes=(1, ),
              decoder=codec,
              # mmpose's heatmap-head init, as the tiny 1K pose configs (the
              # official Kaiming init of the final conv starts from large
              # heatmaps that a tiny model needs hundreds of steps to shrink)
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
dataset = dict(type='Sapiens308Dataset', data_root=data_root,
               ann_file=ann_file, data_prefix=dict(img=''))
train_dataloader = dict(
    batch_size=12, num_workers=0,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(**dataset, pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=12, num_workers=0, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False),
    dataset=dict(**dataset, test_mode=True, pipeline=val_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(type='Keypoints308Metric', ann_file=data_root + ann_file)
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
