# Sapiens2-0.8b top-down pose, 308 keypoints at 1024x768, 8 GPUs x 12,
# 10k iterations: the official Sapiens2 recipe, with backbone activation
# checkpointing on (off in the official pose recipe): without it the batch of
# 12 does not fit an 80 GB GPU (python tools/analysis_tools/estimate_memory.py
# THIS_CONFIG). Fine-tunes from the pretrain checkpoint; to evaluate an
# official task checkpoint see docs/pose.md.
_base_ = [
    '../_base_/default_runtime.py',
    './_base_/sapiens2-pose.py',
    '../_base_/datasets/sapiens308-1024x768.py',
    '../_base_/schedules/pose_adamw-poly-10k.py',
]
pretrained = 'checkpoints/sapiens2_0.8b_pretrain.safetensors'
model = dict(
    backbone=dict(
        arch='sapiens2_0.8b',
        with_cp=True,
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    head=dict(out_channels=308, decoder={{_base_.codec}},
              in_channels=1280, deconv_out_channels=(1024, 768),
              conv_out_channels=(512, 512, 256)))
optim_wrapper = dict(
    paramwise_cfg=dict(num_layers=32, layer_decay_rate=0.85),
    clip_grad=dict(max_norm=4.0))
train_dataloader = dict(batch_size=12)
# The official global batch is 8 x 12; lr is not rescaled automatically.
auto_scale_lr = dict(enable=False, base_batch_size=96)
