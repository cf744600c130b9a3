# 29-class body-part segmentation data for the 4K model: the 1K recipe
# (seg29-1024x768.py: layout, flip pairs, dataloaders, metric) with the image
# at 4096x3072 and the training label at the head's 2048x1536 output
# (SegLabelToOutputSize). At test time the label keeps its original size and
# the 2K logits are resized once, straight to it (SegHead.predict_by_feat),
# so mIoU is computed at the original resolution as at 1K.
# PhotoMetricDistortionLUT and SegRandomFlipLUT are mmseg's
# PhotoMetricDistortion and RandomFlip (same random draws, same bytes,
# tested) with uint8 lookup tables instead of float32 copies of the up to
# 8192x6144 image and a comparison per swapped label (docs/4k.md).
_base_ = ['./seg29-1024x768.py']
height, width = 4096, 3072
output_scale = 0.5  # the 4K heads predict 2048x1536

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadSegAnnotations', num_classes={{_base_.num_classes}}),
    dict(type='SegRandomResize', height=height, width=width,
         ratio_range=(0.4, 2.0), keep_ratio=True),
    dict(type='SegRandomCrop', height=height, width=width, prob=0.3,
         cat_max_ratio=0.75),
    dict(type='SegRandomGaussianBlur', prob=0.3, kernel_size=3,
         sigma_range=(0.1, 2.0)),
    dict(type='SegRandomGaussianNoise', prob=0.3, var_range=(5.0, 20.0)),
    dict(type='mmseg.RandomRotate', prob=0.5, degree=60, pad_val=0,
         seg_pad_val=0),
    dict(type='SegRandomFlipLUT', prob=0.5, direction='horizontal',
         swap_seg_labels={{_base_.flip_swap_pairs}}),
    dict(type='PhotoMetricDistortionLUT'),
    dict(type='SegResize', height=height, width=width),
    dict(type='SegFilterSmallForeground', min_ratio=0.01),
    dict(type='SegLabelToOutputSize', scale=output_scale),
    dict(type='mmseg.PackSegInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='SegResize', height=height, width=width, test_mode=True),
    dict(type='LoadSegAnnotations', num_classes={{_base_.num_classes}}),
    dict(type='mmseg.PackSegInputs'),
]
tta_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='SegResize', height=height, width=width,
                   test_mode=True)],
             [dict(type='mmseg.RandomFlip', prob=0.0, direction='horizontal'),
              dict(type='mmseg.RandomFlip', prob=1.0, direction='horizontal')],
             [dict(type='LoadSegAnnotations',
                   num_classes={{_base_.num_classes}})],
             [dict(type='mmseg.PackSegInputs')],
         ]),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
# One 4K image per GPU at validation: the logits of a batch are resized to
# every original size at once.
val_dataloader = dict(batch_size=1, dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
