# COCO-WholeBody-133 top-down data at 1024x768 with the Sapiens2 pipeline
# (docs/pose.md, pose_topdown-1024x768.py); metainfo (class default), dataset
# and metric are mmpose's.
_base_ = ['./pose_topdown-1024x768.py']
dataset_type = 'mmpose.CocoWholeBodyDataset'
data_root = 'data/coco/'

train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/coco_wholebody_train_v1.0.json',
                 data_prefix=dict(img='train2017/')))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/coco_wholebody_val_v1.0.json',
                 data_prefix=dict(img='val2017/')))
test_dataloader = val_dataloader
val_evaluator = dict(type='mmpose.CocoWholeBodyMetric',
                     ann_file=data_root + 'annotations/coco_wholebody_val_v1.0.json')
test_evaluator = val_evaluator
