# COCO-17 top-down data at 1024x768 with the Sapiens2 pipeline (docs/pose.md,
# pose_topdown-1024x768.py); metainfo (the dataset class default), dataset and
# metric are mmpose's own.
_base_ = ['./pose_topdown-1024x768.py']
dataset_type = 'mmpose.CocoDataset'
data_root = 'data/coco/'

train_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/person_keypoints_train2017.json',
                 data_prefix=dict(img='train2017/')))
val_dataloader = dict(
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='annotations/person_keypoints_val2017.json',
                 data_prefix=dict(img='val2017/')))
test_dataloader = val_dataloader
val_evaluator = dict(type='mmpose.CocoMetric',
                     ann_file=data_root + 'annotations/person_keypoints_val2017.json')
test_evaluator = val_evaluator
