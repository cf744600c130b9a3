# The Sapiens2 top-down pose pipeline at 1024x768 (docs/pose.md), shared by the
# 308-keypoint, COCO-17 and COCO-WholeBody dataset configs, which add the dataset
# type, files and metric. Decoding uses the official mapping
# (decode_mapping='official', see docs/pose.md); leaf configs pass `codec` on to
# the head decoder.
codec = dict(type='Sapiens2UDPHeatmap', input_size=(768, 1024),
             heatmap_size=(192, 256), sigma=6, blur_kernel_size=11,
             decode_mapping='official')

train_pipeline = [
    dict(type='Sapiens2LoadImage', skip_bad=True),
    dict(type='mmpose.GetBBoxCenterScale', padding=1.25),
    dict(type='mmpose.RandomFlip', direction='horizontal', prob=0.5),
    dict(type='mmpose.RandomHalfBody', min_total_keypoints=9,
         min_upper_keypoints=2, min_lower_keypoints=3, padding=1.5, prob=0.3,
         upper_prioritized_prob=0.7),
    dict(type='mmpose.RandomBBoxTransform', shift_factor=0.16, shift_prob=0.3,
         scale_factor=(0.5, 1.5), scale_prob=1.0, rotate_factor=80.0,
         rotate_prob=0.6),
    dict(type='Sapiens2TopdownAffine', input_size=codec['input_size'],
         use_udp=True),
    dict(type='RandomApply', prob=0.8, transforms=[
        dict(type='mmpose.PhotometricDistortion', brightness_delta=32,
             contrast_range=(0.5, 1.5), saturation_range=(0.5, 1.5),
             hue_delta=18)]),
    dict(type='RandomBlur', prob=0.1, blur_limit=(3, 7)),
    dict(type='RandomBlur', prob=0.1, blur_limit=(3, 7), median=True),
    dict(type='RandomCoarseDropout', prob=1.0, num_holes=1,
         hole_ratio=(0.2, 0.4)),
    dict(type='mmpose.GenerateTarget', encoder=codec),
    dict(type='mmpose.PackPoseInputs'),
]
val_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='mmpose.GetBBoxCenterScale', padding=1.25),
    dict(type='Sapiens2TopdownAffine', input_size=codec['input_size'],
         use_udp=True),
    dict(type='mmpose.PackPoseInputs'),
]
test_pipeline = val_pipeline

train_dataloader = dict(
    batch_size=7, num_workers=4, persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(data_prefix=dict(img='images/'), pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4, num_workers=4, persistent_workers=True, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False),
    dataset=dict(data_prefix=dict(img='images/'), test_mode=True,
                 pipeline=val_pipeline))
test_dataloader = val_dataloader
