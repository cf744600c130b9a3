# 29-class body-part segmentation data at 1024x768 (docs/seg.md).
# Layout: {data_root}/images/{train,val}/*.jpg and labels/{train,val}/*.png
# (single-channel class indices 0..28, 255 = ignore).
dataset_type = 'Seg29Dataset'
data_root = 'data/seg29/'
num_classes = 29
height, width = 1024, 768
# Horizontal-flip label swaps, as in sapiens2_mm/metainfo/seg29.json.
flip_swap_pairs = [(5, 14), (6, 15), (7, 16), (8, 17), (9, 18), (10, 19),
                   (11, 20), (12, 21)]

# Official train pipeline, steps 2-10 (the random-background compositing of
# step 1 needs the BG-20k set and is not included).
train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadSegAnnotations', num_classes=num_classes),
    dict(type='SegRandomResize', height=height, width=width,
         ratio_range=(0.4, 2.0), keep_ratio=True),
    dict(type='SegRandomCrop', height=height, width=width, prob=0.3,
         cat_max_ratio=0.75),
    dict(type='SegRandomGaussianBlur', prob=0.3, kernel_size=3,
         sigma_range=(0.1, 2.0)),
    dict(type='SegRandomGaussianNoise', prob=0.3, var_range=(5.0, 20.0)),
    # Border of the label is 0 (background), as in the official rotation.
    dict(type='mmseg.RandomRotate', prob=0.5, degree=60, pad_val=0,
         seg_pad_val=0),
    dict(type='mmseg.RandomFlip', prob=0.5, direction='horizontal',
         swap_seg_labels=flip_swap_pairs),
    dict(type='mmseg.PhotoMetricDistortion'),
    dict(type='SegResize', height=height, width=width),
    dict(type='SegFilterSmallForeground', min_ratio=0.01),
    dict(type='mmseg.PackSegInputs'),
]
# The image is resized to the network size, the label keeps its original size;
# the segmentor resizes the logits back to it (official evaluation).
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='SegResize', height=height, width=width, test_mode=True),
    dict(type='LoadSegAnnotations', num_classes=num_classes),
    dict(type='mmseg.PackSegInputs'),
]
# Flip test (tools/test.py --tta): logits of the flipped view are un-flipped,
# their left/right channels exchanged and averaged with the plain view.
tta_model = dict(type='SegFlipTTAModel', swap_pairs=flip_swap_pairs)
tta_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='SegResize', height=height, width=width,
                   test_mode=True)],
             [dict(type='mmseg.RandomFlip', prob=0.0, direction='horizontal'),
              dict(type='mmseg.RandomFlip', prob=1.0, direction='horizontal')],
             [dict(type='LoadSegAnnotations', num_classes=num_classes)],
             [dict(type='mmseg.PackSegInputs')],
         ]),
]

train_dataloader = dict(
    batch_size=8,
    num_workers=8,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(img_path='images/train', seg_map_path='labels/train'),
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4,
    num_workers=4,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(img_path='images/val', seg_map_path='labels/val'),
        test_mode=True,
        pipeline=test_pipeline))
test_dataloader = val_dataloader

# Official SegEvaluator: background included, absent classes count as 0.
# nan_to_num=None gives mmseg's IoUMetric convention instead.
val_evaluator = dict(type='SegIoUMetric', iou_metrics=['mIoU'], nan_to_num=0.0)
test_evaluator = val_evaluator
