# Tiny 4K-shaped Sapiens2 pose model (308 keypoints): the tiny 1K config
# sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py (arch, head init,
# dataset, metric, schedule) on the path of the 1B-4K config
# (sapiens2-1b-4k_8xb7-20k_sapiens308-4096x3072.py). The tokenizer is on
# (stride 64: a 512x384 crop gives the tiny 1K 8x6 feature map), the head has
# the 4K head's three x2 deconvs and predicts 64x48 heatmaps, 1/8 of the crop
# and twice the tiny 1K heatmaps (32x24), as 512x384 for a 4096x3072 crop
# against 256x192. The codec's sigma and DARK blur kernel double with the
# heatmap (1.5 -> 3, 7 -> 13), as 6 -> 12 and 11 -> 21 at full size; the 1x1
# conv is no wider than the last deconv, as the 4K head's (512, 512, 256)
# after its 512-channel deconv (docs/4k.md). Overfits the 12 labelled people
# on a CPU: a smoke test, not a model to use.
#   python tools/train.py configs/pose/sapiens2-tiny-4k_1xb12-300_sapiens308sample-512x384.py
_base_ = ['./sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py']
codec = dict(type='Sapiens2UDPHeatmap', input_size=(384, 512),
             heatmap_size=(48, 64), sigma=3, blur_kernel_size=13,
             decode_mapping='consistent')
model = dict(
    backbone=dict(img_size=(512, 384), use_tokenizer=True),
    head=dict(deconv_out_channels=(32, 16, 8), deconv_kernel_sizes=(4, 4, 4),
              conv_out_channels=(8, ), decoder=codec))

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
# The tiny 1K loaders with these pipelines, written whole (_delete_): the 1K
# ones also set persistent_workers=False, which this config leaves to
# DataLoader's default (False too).
train_dataloader = dict(
    _delete_=True, batch_size=12, num_workers=0,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(**_base_.dataset, pipeline=train_pipeline))
val_dataloader = dict(
    _delete_=True, batch_size=12, num_workers=0, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False),
    dataset=dict(**_base_.dataset, test_mode=True, pipeline=val_pipeline))
test_dataloader = val_dataloader
