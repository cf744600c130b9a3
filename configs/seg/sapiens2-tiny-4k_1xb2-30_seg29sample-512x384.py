# Tiny 4K-shaped Sapiens2 body-part model: the path of the 1B-4K config
# (sapiens2-1b-4k_8xb4-40k_seg29-4096x3072.py) at CPU size. The tokenizer is on
# (stride 64: a 512x384 input gives the 8x6 feature map of the tiny 1K config
# sapiens2-tiny_1xb2-30_seg29sample-128x96.py), the head has the 4K head's five
# x2 deconvs and predicts at half the input (256x192, twice the tiny 1K
# output, as 2048x1536 for 4096x3072 against 1024x768), training labels come
# down to 256x192 (SegLabelToOutputSize) and the test scores the logits
# resized once to each photo's original size.
# Trains on the bundled sample (tests/data/seg_sample) in seconds: a smoke test,
# not a model to use.
#   python tools/train.py configs/seg/sapiens2-tiny-4k_1xb2-30_seg29sample-512x384.py
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-seg29.py',
    '../_base_/datasets/seg29-4096x3072.py',
    '../_base_/schedules/seg_adamw-poly-20k.py',
]
height, width = 512, 384
tiny_arch = dict(_delete_=True, embed_dims=64, num_layers=4, num_heads=4,
                 feedforward_channels=256, num_tokenizer_layers=2)
model = dict(
    data_preprocessor=dict(size=(height, width)),
    backbone=dict(arch=tiny_arch, img_size=(height, width), with_cp=False,
                  use_tokenizer=True, init_cfg=None),
    decode_head=dict(in_channels=64,
                     deconv_out_channels=(32, 16, 16, 16, 16),
                     deconv_kernel_sizes=(4, 4, 4, 4, 4),
                     conv_out_channels=(16, 16)))

data_root = 'tests/data/seg_sample/'
train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadSegAnnotations', num_classes=29),
    dict(type='SegResize', height=height, width=width),
    dict(type='mmseg.RandomFlip', prob=0.5, direction='horizontal',
         swap_seg_labels={{_base_.flip_swap_pairs}}),
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
train_dataloader = dict(
    batch_size=2, num_workers=0, persistent_workers=False,
    dataset=dict(data_root=data_root,
                 data_prefix=dict(img_path='images', seg_map_path='labels'),
                 pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4, num_workers=0, persistent_workers=False,
    dataset=dict(data_root=data_root,
                 data_prefix=dict(img_path='images', seg_map_path='labels'),
                 pipeline=test_pipeline))
test_dataloader = val_dataloader

max_iters = 30
warmup_iters = 5
optim_wrapper = dict(
    optimizer=dict(lr=3e-3),
    paramwise_cfg=dict(num_layers=4, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False,
         begin=warmup_iters, end=max_iters),
]
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
default_hooks = dict(logger=dict(interval=10),
                     checkpoint=dict(interval=max_iters, max_keep_ckpts=1))
env_cfg = dict(dist_cfg=dict(backend='gloo'))
