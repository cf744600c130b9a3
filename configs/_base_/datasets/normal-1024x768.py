# Surface-normal data at 1024x768 (official normal pipelines).
# Layout: {data_root}/{train,val}/rgb/<name>.png|.jpg, mask/<name>.png
# (channel 0 > 0 = valid) and normal/<name>.npy or .npz['normal'] (H, W, 3)
# unit camera-frame normals. docs/dense_data.md describes the conventions.
dataset_type = 'NormalDataset'
data_root = 'data/normal/'
height, width = 1024, 768

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='mmseg.PhotoMetricDistortion'),
    dict(type='RandomDownUpSample', scale_range=(0.1, 0.7), prob=0.2),
    dict(type='DenseRandomScale', scale_range=(0.5, 2.0), prob=0.3),
    dict(type='DenseRandomCropContinuous', ar_range=(0.5, 2.0),
         area_range=(0.4, 1.0), num_attempts=8, prob=0.3),
    dict(type='DenseRandomFlip', prob=0.3),  # also negates normal x
    # Centred letterbox, image bilinear, targets nearest.
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='round'),
    dict(type='SegRandomGaussianBlur', prob=0.3, kernel_size=3,
         sigma_range=(0.1, 2.0)),
    dict(type='SegRandomGaussianNoise', prob=0.3, var_range=(5.0, 20.0)),
    dict(type='RandomSolarize', prob=0.3, threshold=128),
    dict(type='NormalGenerateTarget'),
    # Drops (skips and counts) masks < 16 px or > 96 % of the image.
    dict(type='PackDenseInputs'),
]
# Image letterboxed with int() sizes and the padding recorded; the targets
# keep the original size, where the prediction is scored after the padding
# is cropped. Nothing is dropped at test time.
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False),
    dict(type='NormalGenerateTarget'),
    dict(type='PackDenseInputs', test_mode=True),
]

# Flip test: each view is packed with its own `flip` flag; the estimator's
# test-time-augmentation wrapper mirrors the flipped prediction back (and
# negates normal / pointmap x) before averaging. Targets are not flipped.
tta_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='DenseResizePad', height=height, width=width,
                   size_rounding='floor', resize_targets=False)],
             [dict(type='DenseRandomFlip', prob=0.0),
              dict(type='DenseRandomFlip', prob=1.0, flip_targets=False)],
             [dict(type='NormalGenerateTarget')],
             [dict(type='PackDenseInputs', test_mode=True)],
         ]),
]

train_dataloader = dict(
    batch_size=7,
    num_workers=4,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        data_root=data_root + 'train',
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4,
    num_workers=4,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root + 'val',
        test_mode=True,
        pipeline=test_pipeline))
test_dataloader = val_dataloader

val_evaluator = dict(type='NormalMetric')
test_evaluator = val_evaluator
