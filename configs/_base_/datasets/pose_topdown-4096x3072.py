# The Sapiens2 top-down pose pipeline for the 4K model: person crops of
# 4096x3072 and 512x384 heatmaps (docs/4k.md), otherwise the 1K pipeline
# (pose_topdown-1024x768.py). Heatmap size: the 1K heads predict at 1/4 of the
# crop (256x192); a 4K head at 1/4 would be 1024x768 x 308 keypoints = 0.97 GB
# of float32 per person for the prediction and as much for the target, so the
# 4K head predicts at 1/8 (one deconv more than 1K, 512x384): twice the 1K
# heatmap resolution, sub-pixel refined by DARK-UDP as at 1K. sigma 12 and the
# DARK blur kernel 21 are the 1K values (6, 11) scaled with the heatmap, so the
# Gaussian keeps its extent relative to the person. Decoding uses the official
# mapping (decode_mapping='official', see docs/pose.md). Used by
# sapiens308-4096x3072.py, which adds the dataset type, files and metric; leaf
# configs pass `codec` on to the head decoder. PosePhotometricDistortionLUT is
# mmpose's PhotometricDistortion (same random draws, same bytes, tested) with
# uint8 lookup tables instead of float32 copies of the 4096x3072 crop.
codec = dict(type='Sapiens2UDPHeatmap', input_size=(3072, 4096),
             heatmap_size=(384, 512), sigma=12, blur_kernel_size=21,
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
        dict(type='PosePhotometricDistortionLUT', brightness_delta=32,
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
    batch_size=1, num_workers=4, persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    dataset=dict(data_prefix=dict(img='images/'), pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=1, num_workers=4, persistent_workers=True, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False),
    dataset=dict(data_prefix=dict(img='images/'), test_mode=True,
                 pipeline=val_pipeline))
test_dataloader = val_dataloader
