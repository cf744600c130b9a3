# The bundled synthetic dense sample (tests/data/dense_sample: 4 ray-cast
# scenes at 256x192 with exact normals, depth, cameras and albedo) letterboxed
# to 128x96 for a CPU: for each dense task (normal, pointmap, albedo) a train
# and a test loader with the Sapiens2 tiny pipelines and the task's metric.
# Every key starts with `dense_sample_`, so this file can stand beside any
# config in `_base_` (mmengine refuses a key that two bases define); types
# carry their scope, so they build under any default_scope. A leaf points the
# standard keys at one task's entries:
#   train_dataloader = _base_.dense_sample_normal_train_dataloader
#   val_dataloader = _base_.dense_sample_normal_test_dataloader
#   test_dataloader = val_dataloader
#   val_evaluator = _base_.dense_sample_normal_evaluator
#   test_evaluator = val_evaluator
dense_sample_root = 'tests/data/dense_sample/'
dense_sample_height, dense_sample_width = 128, 96
dense_sample_train_loader = dict(
    batch_size=2, num_workers=0, persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True))
dense_sample_test_loader = dict(
    batch_size=4, num_workers=0, persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=False))

dense_sample_load = [dict(type='sapiens2_mm.Sapiens2LoadImage'),
                     dict(type='sapiens2_mm.LoadDenseAnnotations')]
dense_sample_train_steps = [
    # a flip also negates normal x, and for pointmaps maps cx -> W - 1 - cx
    # and negates the first row of the extrinsics
    dict(type='sapiens2_mm.DenseRandomFlip', prob=0.5),
    dict(type='sapiens2_mm.DenseResizePad', height=dense_sample_height,
         width=dense_sample_width),
]
# The image is letterboxed, the targets keep the original size (the
# prediction is un-letterboxed and scored there).
dense_sample_test_steps = [
    dict(type='sapiens2_mm.DenseResizePad', height=dense_sample_height,
         width=dense_sample_width, size_rounding='floor',
         resize_targets=False),
]
dense_sample_pack = dict(type='sapiens2_mm.PackDenseInputs')
dense_sample_test_pack = dict(type='sapiens2_mm.PackDenseInputs',
                              test_mode=True)

# normal: unit normals (OpenCV camera frame)
dense_sample_normal_target = [dict(type='sapiens2_mm.NormalGenerateTarget')]
dense_sample_normal_train_dataloader = dict(
    **dense_sample_train_loader,
    dataset=dict(type='sapiens2_mm.NormalDataset', data_root=dense_sample_root,
                 pipeline=dense_sample_load + dense_sample_train_steps +
                 dense_sample_normal_target + [dense_sample_pack]))
dense_sample_normal_test_dataloader = dict(
    **dense_sample_test_loader,
    dataset=dict(type='sapiens2_mm.NormalDataset', data_root=dense_sample_root,
                 test_mode=True,
                 pipeline=dense_sample_load + dense_sample_test_steps +
                 dense_sample_normal_target + [dense_sample_test_pack]))
dense_sample_normal_evaluator = dict(type='sapiens2_mm.NormalMetric')

# pointmap: camera-frame points; the canonical scale is 768 / fx of the
# letterboxed input
dense_sample_pointmap_target = [dict(
    type='sapiens2_mm.PointmapGenerateTarget', canonical_focal_length=768.0)]
dense_sample_pointmap_train_dataloader = dict(
    **dense_sample_train_loader,
    dataset=dict(type='sapiens2_mm.PointmapDataset',
                 data_root=dense_sample_root,
                 pipeline=dense_sample_load + dense_sample_train_steps +
                 dense_sample_pointmap_target + [dense_sample_pack]))
dense_sample_pointmap_test_dataloader = dict(
    **dense_sample_test_loader,
    dataset=dict(type='sapiens2_mm.PointmapDataset',
                 data_root=dense_sample_root, test_mode=True,
                 pipeline=dense_sample_load + dense_sample_test_steps +
                 dense_sample_pointmap_target + [dense_sample_test_pack]))
dense_sample_pointmap_evaluator = dict(type='sapiens2_mm.PointmapMetric')

# albedo: RGB / 255 of the albedo PNGs (no target step)
dense_sample_albedo_train_dataloader = dict(
    **dense_sample_train_loader,
    dataset=dict(type='sapiens2_mm.AlbedoDataset', data_root=dense_sample_root,
                 pipeline=dense_sample_load + dense_sample_train_steps +
                 [dense_sample_pack]))
dense_sample_albedo_test_dataloader = dict(
    **dense_sample_test_loader,
    dataset=dict(type='sapiens2_mm.AlbedoDataset', data_root=dense_sample_root,
                 test_mode=True,
                 pipeline=dense_sample_load + dense_sample_test_steps +
                 [dense_sample_test_pack]))
dense_sample_albedo_evaluator = dict(type='sapiens2_mm.AlbedoMetric')
