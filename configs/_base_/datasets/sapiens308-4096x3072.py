# 308-keypoint top-down data for the 4K model (docs/4k.md): 4096x3072 crops,
# 512x384 heatmaps; otherwise as sapiens308-1024x768.py (docs/pose.md).
# Annotations are COCO json files with `goliath_wholebody_kpts` (308 x 3) per
# person, e.g. made from COCO-WholeBody by tools/dataset_converters. Pipeline and codec:
# pose_topdown-4096x3072.py.
_base_ = ['./pose_topdown-4096x3072.py']
dataset_type = 'Sapiens308Dataset'
data_root = 'data/sapiens308/'

# Official training sample rule: >= 8 visible keypoints, >= 6 of them among
# the first 21 (body + feet).
train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/train.json', min_visible_keypoints=8,
                 min_visible_body_keypoints=6))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/test.json'))
test_dataloader = val_dataloader
# The 308-keypoint COCO-style OKS metric (whole-body AP + per-part AP).
val_evaluator = dict(type='Keypoints308Metric',
                     ann_file=data_root + 'annotations/test.json')
test_evaluator = val_evaluator
