# HRNet-W48 (mmpose td-hm_hrnet-w48_8xb32-210e_coco-256x192) on COCO-17 with
# the data, pipeline (1024x768, the Sapiens2 UDP codec, 256x192 heatmaps) and
# metric of configs/pose/sapiens2-1b_8xb7-20k_coco-1024x768.py, the upstream
# optimizer (Adam 5e-4) on the Sapiens2 20k-iteration schedule. Batch 8 per
# GPU: upstream's per-GPU batch at 256x192 scaled by the pixel count (not
# measured on a GPU). docs/baselines.md.
#   tools/dist_train.sh configs/baselines/pose/td-hm_hrnet-w48_8xb8-20k_coco-1024x768.py 8
_base_ = [
    '../../_base_/default_runtime.py',
    '../_base_/hrnet-w48.py',
    '../../_base_/datasets/coco-1024x768.py',
    '../../_base_/schedules/pose_adamw-poly-20k.py',
]
model = dict(head=dict(out_channels=17, decoder={{_base_.codec}}))
optim_wrapper = dict(
    _delete_=True, type='AmpOptimWrapper', dtype='bfloat16',
    optimizer=dict(type='Adam', lr=5e-4))
train_dataloader = dict(batch_size=8)
auto_scale_lr = dict(enable=False, base_batch_size=64)
