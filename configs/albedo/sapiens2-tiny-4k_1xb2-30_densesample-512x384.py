# Tiny 4K-shaped Sapiens2 albedo model: the tiny 1K config
# (sapiens2-tiny_1xb2-30_densesample-128x96.py: arch, losses, schedule) on the
# path of the 1B-4K config (sapiens2-1b-4k_8xb1-280k_albedo-4096x3072.py). The
# tokenizer is on (stride 64: a 512x384 input gives the tiny 1K 8x6 feature
# map), the decoder has the 4K head's five x2 stages and predicts at half the
# input (256x192, twice the tiny 1K output, as 2048x1536 for 4096x3072 against
# 1024x768); the even letterbox (align=2, output_scale=0.5) puts the training
# targets at 256x192, and the test un-letterboxes the half-size prediction and
# scores it at the original size. Trains on the bundled synthetic scenes
# (tests/data/dense_sample, 256x192) in seconds: a smoke test, not a model to
# use.
#   python tools/train.py configs/albedo/sapiens2-tiny-4k_1xb2-30_densesample-512x384.py
_base_ = ['./sapiens2-tiny_1xb2-30_densesample-128x96.py']
height, width = 512, 384

model = dict(
    backbone=dict(img_size=(height, width), use_tokenizer=True),
    decode_head=dict(upsample_channels=(32, 16, 16, 8, 8)))

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseRandomFlip', prob=0.5),
    # letterbox; the targets straight to the 256x192 output frame
    dict(type='DenseResizePad', height=height, width=width, align=2,
         output_scale=0.5),
    dict(type='PackDenseInputs'),
]
# The image is letterboxed, the targets keep the original size (the
# half-size prediction is un-letterboxed and scored there).
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadDenseAnnotations'),
    dict(type='DenseResizePad', height=height, width=width,
         size_rounding='floor', resize_targets=False, align=2),
    dict(type='DenseToOutputSize', scale=0.5, resize_targets=False),
    dict(type='PackDenseInputs', test_mode=True),
]
# loaders (data root, batch sizes, samplers) and metric from the tiny 1K
# config; the test loader follows the val loader here too
train_dataloader = dict(
    dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
