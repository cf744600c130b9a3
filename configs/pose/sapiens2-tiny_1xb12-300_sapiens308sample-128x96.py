# A tiny Sapiens2 pose model on the 308 keypoints of the bundled sample: the
# COCO-WholeBody annotations of tests/data/coco_sample converted by
#   python tools/dataset_converters/coco_wholebody_to_sapiens308.py \
#       tests/data/coco_sample/test_coco_wholebody.json \
#       tests/data/coco_sample/test_sapiens308.json
# (12 of the 14 people have labelled keypoints, 15-52 of the 308 each), with
# the model, pipeline and schedule of sapiens2-tiny_1xb12-300_cocosample and
# the 308-keypoint dataset and OKS metric of the full-size configs.
# Run: python tools/train.py configs/pose/sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py
_base_ = ['./sapiens2-tiny_1xb12-300_cocosample-128x96.py']
data_root = 'tests/data/coco_sample/'
ann_file = 'test_sapiens308.json'
model = dict(head=dict(out_channels=308))
dataset = dict(_delete_=True, type='Sapiens308Dataset', data_root=data_root,
               ann_file=ann_file, data_prefix=dict(img=''))
train_dataloader = dict(
    dataset=dict(**dataset, pipeline={{_base_.train_pipeline}}))
val_dataloader = dict(
    dataset=dict(**dataset, test_mode=True,
                 pipeline={{_base_.val_pipeline}}))
test_dataloader = val_dataloader
val_evaluator = dict(_delete_=True, type='Keypoints308Metric',
                     ann_file=data_root + ann_file)
test_evaluator = val_evaluator
