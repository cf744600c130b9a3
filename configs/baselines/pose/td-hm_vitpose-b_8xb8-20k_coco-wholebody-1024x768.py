# ViTPose-B (mmpose td-hm_ViTPose-base_8xb64-210e_coco-256x192, MAE init) on
# COCO-WholeBody (133 keypoints) with the data, pipeline (1024x768, the
# Sapiens2 UDP codec, 256x192 heatmaps) and metric of
# configs/pose/sapiens2-1b_8xb7-20k_coco-wholebody-1024x768.py, the upstream
# optimizer (AdamW 5e-4, layer decay 0.75) on the Sapiens2 20k-iteration
# schedule. Batch 8 per GPU: upstream's per-GPU batch at 256x192 scaled by the
# pixel count (not measured on a GPU). docs/baselines.md.
#   tools/dist_train.sh configs/baselines/pose/td-hm_vitpose-b_8xb8-20k_coco-wholebody-1024x768.py 8
_base_ = [
    '../../_base_/default_runtime.py',
    '../_base_/vitpose-b.py',
    '../../_base_/datasets/coco-wholebody-1024x768.py',
    '../../_base_/schedules/pose_adamw-poly-20k.py',
]
custom_imports = dict(imports=[
    'sapiens2_mm', 'mmpose.engine.optim_wrappers.layer_decay_optim_wrapper'])
model = dict(head=dict(out_channels=133, decoder={{_base_.codec}}))
optim_wrapper = dict(_delete_=True, **_base_.vitpose_optim_wrapper)
train_dataloader = dict(batch_size=8)
auto_scale_lr = dict(enable=False, base_batch_size=64)
