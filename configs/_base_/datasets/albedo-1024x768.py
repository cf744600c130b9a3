# Albedo data at 1024x768 (official albedo pipelines: no photometric
# distortion, only Gaussian noise).
# Layout: {data_root}/{train,val}/rgb/<name>.png|.jpg, mask/<name>.png and
# albedo/<name>.png (sRGB; target = RGB / 255 in [0, 1]).
# docs/dense_data.md describes the conventions.
dataset_type = 'AlbedoDataset'
data_root = 'data/albedo/'
height, width = 1024, 768

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseRandomScale', scale_range=(0.5, 2.0), prob=0.3),
    dict(type='DenseRandomCropContinuous', ar_range=(0.5, 2.0),
         area_range=(0.4, 1.0), num_attempts=8, prob=0.3),
    dict(type='DenseRandomFlip', prob=0.3),
    # Albedo is resized bilinearly, the mask nearest.
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='round'),
    dict(type='SegRandomGaussianNoise', prob=0.2, var_range=(5.0, 20.0)),
    # Also drops samples whose albedo std over the mask is below 0.02.
    dict(type='PackDenseInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False),
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

val_evaluator = dict(type='AlbedoMetric')
test_evaluator = val_evaluator
