# Recipe "your own keypoints" (docs/custom_data.md): the tiny Sapiens2 pose
# model on 21 hand keypoints. A COCO-format annotation file whose
# `keypoints` hold 21 (x, y, v) triplets per instance, the metainfo file
# (names, skeleton, flip partners, sigmas) and the head's 21 output channels;
# mmpose's CocoMetric scores OKS with the metainfo's sigmas, and the flip
# augmentation and flip test use its flip partners. tools/train.py and
# tools/test.py check that the head and every dataset agree on the count.
#   python tools/train.py configs/examples/pose/sapiens2-tiny_1xb12-300_hand21-128x96.py
_base_ = ['../../pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py']
data_root = 'data/hand21/'
ann_file = 'annotations.json'
metainfo = dict(from_file='configs/_base_/datasets/hand21.py')
model = dict(head=dict(out_channels=21))
hand_dataset = dict(type='mmpose.CocoDataset', data_root=data_root,
                    ann_file=ann_file, data_prefix=dict(img='images/'),
                    metainfo=metainfo)
train_dataloader = dict(
    dataset=dict(_delete_=True, **hand_dataset,
                 pipeline=_base_.train_pipeline))
val_dataloader = dict(
    dataset=dict(_delete_=True, **hand_dataset, test_mode=True,
                 pipeline=_base_.val_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(ann_file=data_root + ann_file)
test_evaluator = val_evaluator
