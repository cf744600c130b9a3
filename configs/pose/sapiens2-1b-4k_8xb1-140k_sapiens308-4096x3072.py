# Sapiens2-1B-4K top-down pose (308 keypoints) on 4096x3072 person crops with
# 512x384 heatmaps, fine-tuned from the official 4K pretrain file (no official
# 4K task model exists; docs/4k.md). Schedule: the 1b 1K recipe (bf16; AdamW
# 5e-4, layer decay 0.9, clip 4, 500 warmup + linear decay over 20k optimizer
# steps of 56 crops) with 1 crop per GPU (from the memory estimate, docs/4k.md)
# and 7 gradient accumulation steps (8 x 1 x 7 = the 1K global batch), so
# loader iterations = 7 x the optimizer steps. Batch rule (docs/4k.md): the
# official 1K per-GPU batch x the estimated 4K / 1K capacity (pose 7 x 10 / 24
# = 2.9 (1K with checkpointing)), then the largest divisor of the 1K batch, so
# the global batch and lr stay. Backbone activation checkpointing is on (the 1K
# pose recipe has it off).
#   python tools/analysis_tools/estimate_memory.py THIS_CONFIG
# Backbone: sapiens2_1b with the windowed tokenizer (use_tokenizer=True): 16-px
# patches pooled per 4x4 window, stride 64, a 64x48 feature map.
# Head: the 1K pose head's two x2 deconvs (1536, 1024) plus a third (512):
# 64x48 -> 512x384 heatmaps, 1/8 of the crop (the 1K head: 1/4). Why 512x384
# and not 1024x768: ../_base_/datasets/pose_topdown-4096x3072.py. The third
# deconv halves the width as the 1K head's second does; the 1x1 convs (512,
# 512, 256) follow it.
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pose.py',
    '../_base_/datasets/sapiens308-4096x3072.py',
    '../_base_/schedules/pose_adamw-poly-20k.py',
]
height, width = 4096, 3072
accumulation = 7
pretrained = 'checkpoints/sapiens2_1b_4k_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_1b',
        img_size=(height, width),
        use_tokenizer=True,
        with_cp=True,
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    head=dict(out_channels=308, decoder={{_base_.codec}},
              in_channels=1536, deconv_out_channels=(1536, 1024, 512),
              deconv_kernel_sizes=(4, 4, 4),
              conv_out_channels=(512, 512, 256)))
optim_wrapper = dict(
    accumulative_counts=accumulation,
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0))
max_iters = 20000 * accumulation
warmup_iters = 500 * accumulation
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='PolyLR', power=1.0, eta_min=0.0, by_epoch=False,
         begin=warmup_iters, end=max_iters),
]
train_cfg = dict(max_iters=max_iters, val_interval=1000 * accumulation)
default_hooks = dict(checkpoint=dict(interval=1000 * accumulation))
train_dataloader = dict(batch_size=1)
auto_scale_lr = dict(enable=False, base_batch_size=56)
