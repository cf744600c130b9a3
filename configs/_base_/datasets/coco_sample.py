# The bundled COCO-17 sample (tests/data/coco_sample: 4 photos, 14 people, 12
# of them with keypoints) for top-down pose on a CPU: dataset, loaders and
# mmpose's CocoMetric. Every key starts with `coco_sample_`, so this file can
# stand beside any mmpose config in `_base_` (mmengine refuses a key that two
# bases define). The leaf points the standard keys at these and adds its own
# pipelines, e.g. (configs/baselines/pose/ has complete examples):
#   train_dataloader = dict(**coco_sample_train_loader, dataset=dict(
#       **coco_sample_dataset, pipeline=train_pipeline))
# with `_base_.` in front of names a base defines, and `_delete_=True` where a
# base already has that loader.
coco_sample_root = 'tests/data/coco_sample/'
coco_sample_dataset = dict(
    type='mmpose.CocoDataset', data_root=coco_sample_root, data_mode='topdown',
    ann_file='test_coco.json', data_prefix=dict(img=''))
coco_sample_train_loader = dict(
    batch_size=12, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True))
coco_sample_test_loader = dict(
    batch_size=12, num_workers=0, persistent_workers=False, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False, round_up=False))
coco_sample_evaluator = dict(type='mmpose.CocoMetric',
                             ann_file=coco_sample_root + 'test_coco.json')
