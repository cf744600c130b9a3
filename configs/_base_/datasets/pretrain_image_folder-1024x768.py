# Unlabelled image folder -> 2 global crops (1024x768) + local crops (256x192).
# DINO's multi-crop: global crops cover 32-100 % of the image, local crops
# 5-32 %; crops keep the 3:4 (W:H) aspect ratio +-25 % so people are not
# stretched. Global crop 1 always blurs, crop 2 blurs with p 0.1 and solarizes
# with p 0.2 (BYOL/DINO asymmetry). Switch global/local crops to the
# person-centric crop with `person_boxes` (see docs/pretrain.md).
data_root = 'data/pretrain_images/'
global_size = (1024, 768)  # (H, W)
local_size = (256, 192)
num_local_crops = 4
_color = [
    dict(type='mmcv.RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='mmpretrain.RandomApply', prob=0.8, transforms=[
        dict(type='mmpretrain.ColorJitter', brightness=0.4, contrast=0.4,
             saturation=0.2, hue=0.1, backend='cv2')]),
    dict(type='mmpretrain.RandomGrayscale', prob=0.2, keep_channels=True),
]
_aspect = (0.75 * 0.75, 1.25 * 0.75)  # W / H around 3:4
global_view_1 = [
    dict(type='mmpretrain.RandomResizedCrop', scale=global_size,
         crop_ratio_range=(0.32, 1.0), aspect_ratio_range=_aspect),
    *_color,
    dict(type='RandomGaussianBlur', prob=1.0),
]
global_view_2 = [
    dict(type='mmpretrain.RandomResizedCrop', scale=global_size,
         crop_ratio_range=(0.32, 1.0), aspect_ratio_range=_aspect),
    *_color,
    dict(type='RandomGaussianBlur', prob=0.1),
    dict(type='mmpretrain.Solarize', thr=128, prob=0.2),
]
local_view = [
    dict(type='mmpretrain.RandomResizedCrop', scale=local_size,
         crop_ratio_range=(0.05, 0.32), aspect_ratio_range=_aspect),
    *_color,
    dict(type='RandomGaussianBlur', prob=0.5),
]
train_pipeline = [
    dict(type='Sapiens2LoadImage', skip_bad=True),
    dict(type='CheckMinImageSize', min_size=(512, 384), skip=True),
    dict(type='mmpretrain.MultiView', num_views=[1, 1, num_local_crops],
         transforms=[global_view_1, global_view_2, local_view]),
    dict(type='mmpretrain.PackInputs'),
]
train_dataloader = dict(
    batch_size=32,
    num_workers=8,
    persistent_workers=True,
    pin_memory=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(type='ImageFolderDataset', data_root=data_root,
                 verify=False, pipeline=train_pipeline))
