# Tiny 4K-shaped Sapiens2 body-part model: the tiny 1K config
# (sapiens2-tiny_1xb2-30_seg29sample-128x96.py: arch, loss, schedule, loaders,
# metric) on the path of the 1B-4K config
# (sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py). The tokenizer is on (stride
# 64: a 512x384 input gives the tiny 1K 8x6 feature map), the head has the 4K
# head's five x2 deconvs and predicts at half the input (256x192, twice the
# tiny 1K output, as 2048x1536 for 4096x3072 against 1024x768), training
# labels come down to 256x192 (SegLabelToOutputSize) and the test scores the
# logits resized once to each photo's original size.
# Trains on the bundled sample (tests/data/seg_sample) in seconds: a smoke test,
# not a model to use.
#   python tools/train.py configs/seg/sapiens2-tiny-4k_1xb2-30_seg29sample-512x384.py
_base_ = ['./sapiens2-tiny_1xb2-30_seg29sample-128x96.py']
height, width = 512, 384
model = dict(
    data_preprocessor=dict(size=(height, width)),
    backbone=dict(img_size=(height, width), use_tokenizer=True),
    decode_head=dict(deconv_out_channels=(32, 16, 16, 16, 16),
                     deconv_kernel_sizes=(4, 4, 4, 4, 4)))

train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadSegAnnotations', num_classes=29),
    dict(type='SegResize', height=height, width=width),
    dict(type='mmseg.RandomFlip', prob=0.5, direction='horizontal',
         swap_seg_labels={{_base_.seg29_sample_flip_swap_pairs}}),
    dict(type='SegLabelToOutputSize', scale=0.5),
    dict(type='mmseg.PackSegInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='SegResize', height=height, width=width, test_mode=True),
    dict(type='LoadSegAnnotations', num_classes=29),
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
             [dict(type='LoadSegAnnotations', num_classes=29)],
             [dict(type='mmseg.PackSegInputs')],
         ]),
]
# loaders (data root, batch sizes, samplers), flip swap pairs, metric and
# TTA model from the tiny 1K config; the test loader follows the val loader
train_dataloader = dict(
    dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
