# Sapiens2-1B-4K body-part segmentation (29 classes) at 4096x3072 with
# 2048x1536 logits, fine-tuned from the official 4K pretrain file (no official
# 4K task model exists; docs/4k.md). Schedule: the 1b 1K recipe (AdamW 5e-4,
# layer decay 0.9, clip 4, 500 warmup + linear decay over 20k optimizer steps
# of 64 images), FSDP with bf16 parameters and autocast (configs/_base_/
# strategies/fsdp_bf16.py) and activation checkpointing, with 4 images per GPU
# and 2 gradient accumulation steps (8 x 4 x 2 = the 1K global batch), so
# loader iterations = 2 x the optimizer steps.
# Batch rule (docs/4k.md): the largest divisor of the official 1K per-GPU
# batch that the memory estimate fits on an 80 GB GPU under FSDP with
# checkpointing; gradient accumulation makes up the rest of the 1K global
# batch, so the global batch, lr and number of optimizer steps are the 1K
# recipe's.
#   python tools/analysis_tools/estimate_memory.py THIS_CONFIG
#   tools/dist_train.sh THIS_CONFIG 8
# Backbone: sapiens2_1b with the windowed tokenizer (use_tokenizer=True): 16-px
# patches pooled per 4x4 window, stride 64, a 64x48 feature map.
# Head: the 1K SegHead (4 deconvs, x16) plus one more x2 deconv (x32): 64x48 ->
# 2048x1536, half the input, as the official 4K pretraining decodes at 2K. The
# extra stage keeps 64 channels (the 1K head's last width, enough for 29
# classes). A sixth stage to the full 4096x3072 would add a 29 x 4096 x 3072
# float32 logit map (1.5 GB) and its gradient per image.
# Labels at 2K, logits resized once to the original size: the dataset base.
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-seg29.py',
    '../_base_/datasets/seg29-4096x3072.py',
    '../_base_/schedules/seg_adamw-poly-20k.py',
    '../_base_/strategies/fsdp_bf16.py',
]
height, width = 4096, 3072
accumulation = 2
pretrained = 'checkpoints/sapiens2_1b_4k_pretrain.safetensors'
model = dict(
    data_preprocessor=dict(size=(height, width)),
    backbone=dict(
        arch='sapiens2_1b',
        img_size=(height, width),
        use_tokenizer=True,
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    decode_head=dict(
        in_channels=1536,
        deconv_out_channels=(512, 256, 128, 64, 64),
        deconv_kernel_sizes=(4, 4, 4, 4, 4)))
optim_wrapper = dict(
    type='AmpOptimWrapper', dtype='bfloat16',
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
train_dataloader = dict(batch_size=4)
auto_scale_lr = dict(enable=False, base_batch_size=64)
