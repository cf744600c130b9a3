# Sapiens2-1B-4K top-down pose (308 keypoints) on 4096x3072 person crops with
# 512x384 heatmaps, fine-tuned from the official 4K pretrain file (no official
# 4K task model exists; docs/4k.md). Schedule: the 1b 1K recipe, 8 GPUs x 7
# crops, 20k iterations (AdamW 5e-4, layer decay 0.9, clip 4, 500 warmup +
# linear decay), FSDP with bf16 parameters and autocast (configs/_base_/
# strategies/fsdp_bf16.py) and backbone activation checkpointing, as the 1b 1K
# pose config (the official 1K pose recipe has checkpointing off).
# Batch rule (docs/4k.md): the largest divisor of the official 1K per-GPU
# batch that the memory estimate fits on an 80 GB GPU under FSDP with
# checkpointing; gradient accumulation makes up the rest of the 1K global
# batch, so the global batch, lr and number of optimizer steps are the 1K
# recipe's.
#   python tools/analysis_tools/estimate_memory.py THIS_CONFIG
#   tools/dist_train.sh THIS_CONFIG 8
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
    '../_base_/strategies/fsdp_bf16.py',
]
height, width = 4096, 3072
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
    paramwise_cfg=dict(num_layers=40, layer_decay_rate=0.9),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=7)
auto_scale_lr = dict(enable=False, base_batch_size=56)
