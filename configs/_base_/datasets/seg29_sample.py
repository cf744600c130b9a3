# The bundled body-part sample (tests/data/seg_sample: 4 COCO photos with
# 29-class label maps) at 128x96 for a CPU: datasets with the Sapiens2 tiny
# pipelines, loaders, flip test and the official SegIoUMetric. Every key starts
# with `seg29_sample_`, so this file can stand beside any mmseg or sapiens2_mm
# config in `_base_` (mmengine refuses a key that two bases define); types
# carry their scope, so they build under any default_scope. A leaf points the
# standard keys at these:
#   train_dataloader = _base_.seg29_sample_train_dataloader
#   val_dataloader = _base_.seg29_sample_test_dataloader
#   test_dataloader = val_dataloader
#   val_evaluator = _base_.seg29_sample_evaluator
#   test_evaluator = val_evaluator
# (with `dict(_delete_=True, **...)` where a base already has that key;
# configs/baselines/seg/ has complete examples).
seg29_sample_root = 'tests/data/seg_sample/'
seg29_sample_height, seg29_sample_width = 128, 96
seg29_sample_num_classes = 29
# Horizontal-flip label swaps of the 29 classes (sapiens2_mm/metainfo/seg29.json)
seg29_sample_flip_swap_pairs = [(5, 14), (6, 15), (7, 16), (8, 17), (9, 18),
                                (10, 19), (11, 20), (12, 21)]

seg29_sample_train_pipeline = [
    dict(type='sapiens2_mm.Sapiens2LoadImage'),
    dict(type='sapiens2_mm.LoadSegAnnotations',
         num_classes=seg29_sample_num_classes),
    dict(type='sapiens2_mm.SegResize', height=seg29_sample_height,
         width=seg29_sample_width),
    dict(type='mmseg.RandomFlip', prob=0.5, direction='horizontal',
         swap_seg_labels=seg29_sample_flip_swap_pairs),
    dict(type='mmseg.PackSegInputs'),
]
# The image is resized to the network size, the label keeps its original size
# (the segmentor resizes the logits back to it: official evaluation).
seg29_sample_test_pipeline = [
    dict(type='sapiens2_mm.Sapiens2LoadImage'),
    dict(type='sapiens2_mm.SegResize', height=seg29_sample_height,
         width=seg29_sample_width, test_mode=True),
    dict(type='sapiens2_mm.LoadSegAnnotations',
         num_classes=seg29_sample_num_classes),
    dict(type='mmseg.PackSegInputs'),
]
# Flip test (tools/test.py --tta): the flipped view's logits are un-flipped,
# their left/right channels exchanged and averaged with the plain view.
seg29_sample_tta_model = dict(type='sapiens2_mm.SegFlipTTAModel',
                              swap_pairs=seg29_sample_flip_swap_pairs)
seg29_sample_tta_pipeline = [
    dict(type='sapiens2_mm.Sapiens2LoadImage'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='sapiens2_mm.SegResize', height=seg29_sample_height,
                   width=seg29_sample_width, test_mode=True)],
             [dict(type='mmseg.RandomFlip', prob=0.0, direction='horizontal'),
              dict(type='mmseg.RandomFlip', prob=1.0, direction='horizontal')],
             [dict(type='sapiens2_mm.LoadSegAnnotations',
                   num_classes=seg29_sample_num_classes)],
             [dict(type='mmseg.PackSegInputs')],
         ]),
]
seg29_sample_dataset = dict(
    type='sapiens2_mm.Seg29Dataset', data_root=seg29_sample_root,
    data_prefix=dict(img_path='images', seg_map_path='labels'))
seg29_sample_train_dataloader = dict(
    batch_size=2, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(**seg29_sample_dataset, pipeline=seg29_sample_train_pipeline))
seg29_sample_test_dataloader = dict(
    batch_size=4, num_workers=0, persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(**seg29_sample_dataset, test_mode=True,
                 pipeline=seg29_sample_test_pipeline))
# Official SegEvaluator: background included, absent classes count as 0.
# nan_to_num=None gives mmseg's IoUMetric convention instead.
seg29_sample_evaluator = dict(type='sapiens2_mm.SegIoUMetric',
                              iou_metrics=['mIoU'], nan_to_num=0.0)
