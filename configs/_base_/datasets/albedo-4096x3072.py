# Albedo data for the 4K model: the 1K recipe (albedo-1024x768.py: layout,
# dataloaders, metric) with the image letterboxed to 4096x3072 and the targets
# at the head's 2048x1536 output.
# * DenseResizePad(align=2): the resized size and the left/top padding are
#   even, so the letterbox is a whole number of 2K output pixels and the
#   prediction is un-letterboxed exactly (any photo size works: it is
#   letterboxed, never refused).
# * Training: DenseResizePad(output_scale=0.5) letterboxes the targets
#   straight into the 2048x1536 output frame and moves cam_K there, with the
#   result of the letterbox followed by DenseToOutputSize(scale=0.5) (every
#   array equal, tested) without a 4096x3072 float map per target.
# * Test: DenseToOutputSize(scale=0.5, resize_targets=False): the targets
#   keep the original size (metrics at the original resolution, as at 1K)
#   and only cam_K moves to the output frame.
_base_ = ['./albedo-1024x768.py']
height, width = 4096, 3072
output_scale = 0.5  # the 4K heads predict 2048x1536

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseRandomScale', scale_range=(0.5, 2.0), prob=0.3),
    dict(type='DenseRandomCropContinuous', ar_range=(0.5, 2.0),
         area_range=(0.4, 1.0), num_attempts=8, prob=0.3),
    dict(type='DenseRandomFlip', prob=0.3),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='round', align=2, output_scale=output_scale),
    dict(type='SegRandomGaussianNoise', prob=0.2, var_range=(5.0, 20.0)),
    dict(type='PackDenseInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False, align=2),
    dict(type='DenseToOutputSize', scale=output_scale, resize_targets=False),
    dict(type='PackDenseInputs', test_mode=True),
]
tta_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='DenseResizePad', height=height, width=width,
                   size_rounding='floor', resize_targets=False, align=2)],
             [dict(type='DenseRandomFlip', prob=0.0),
              dict(type='DenseRandomFlip', prob=1.0, flip_targets=False)],
             # after the flip: cam_K is mirrored in the input frame
             [dict(type='DenseToOutputSize', scale=output_scale,
                   resize_targets=False)],
             [dict(type='PackDenseInputs', test_mode=True)],
         ]),
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(batch_size=1, dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
