# Tiny Sapiens2 body-part model that trains on the bundled sample
# (tests/data/seg_sample, 4 COCO photos with derived labels; data, pipelines,
# flip test and metric from ../_base_/datasets/seg29_sample.py) on a CPU in
# seconds: a smoke test of the whole recipe, not a model to use.
#   python tools/train.py configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-seg29.py',
    '../_base_/datasets/seg29_sample.py',
    '../_base_/schedules/seg_adamw-poly-20k.py',
]
height, width = 128, 96  # the sample base's size
tiny_arch = dict(_delete_=True, embed_dims=64, num_layers=4, num_heads=4,
                 feedforward_channels=256, num_tokenizer_layers=2)
model = dict(
    data_preprocessor=dict(size=(height, width)),
    backbone=dict(arch=tiny_arch, img_size=(height, width), with_cp=False,
                  init_cfg=None),
    decode_head=dict(in_channels=64, deconv_out_channels=(32, 16, 16, 16),
                     conv_out_channels=(16, 16)))

train_dataloader = _base_.seg29_sample_train_dataloader
val_dataloader = _base_.seg29_sample_test_dataloader
test_dataloader = val_dataloader
val_evaluator = _base_.seg29_sample_evaluator
test_evaluator = val_evaluator
tta_model = _base_.seg29_sample_tta_model
tta_pipeline = _base_.seg29_sample_tta_pipeline

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
