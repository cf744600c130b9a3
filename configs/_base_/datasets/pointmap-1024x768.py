# Pointmap data at 1024x768 (official pointmap pipelines).
# Layout: {data_root}/{train,val}/rgb/<name>.png|.jpg, mask/<name>.png,
# depth/<name>.npy (H, W) metric camera Z, camera_intrinsics/<name>.txt (3x3)
# and camera_extrinsics/<name>.txt (4x4 world-to-camera).
# docs/dense_data.md describes the conventions.
dataset_type = 'PointmapDataset'
data_root = 'data/pointmap/'
height, width = 1024, 768
canonical_focal_length = 768.0

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    # NaN, inf and <= 0 depth leave the mask (depth_invalid='nan' is the
    # official rule: only NaN).
    dict(type='LoadDenseAnnotations'),
    dict(type='mmseg.PhotoMetricDistortion'),
    dict(type='DenseRandomScale', scale_range=(0.5, 2.0), prob=0.3),
    dict(type='DenseRandomCropContinuous', ar_range=(0.5, 2.0),
         area_range=(0.4, 1.0), num_attempts=8, prob=0.3),
    # cx -> W - 1 - cx, first row of the extrinsics negated.
    dict(type='DenseRandomFlip', prob=0.3),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='round'),
    dict(type='PointmapGenerateTarget',
         canonical_focal_length=canonical_focal_length),
    # Also drops samples whose minimum canonical depth is below 0.04.
    dict(type='PackDenseInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False),
    # The canonical scale is 768 / fx of the letterboxed network input.
    dict(type='PointmapGenerateTarget',
         canonical_focal_length=canonical_focal_length),
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
             [dict(type='PointmapGenerateTarget',
                   canonical_focal_length=canonical_focal_length)],
             [dict(type='PackDenseInputs', test_mode=True)],
         ]),
]

train_dataloader = dict(
    batch_size=3,
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

val_evaluator = dict(type='PointmapMetric')
test_evaluator = val_evaluator
