# Tiny Sapiens2 + FCN segmentation on the synthetic set of make_tiny_seg_data.py.
# Used by the train/test/dist/resume tool tests; trains in seconds on a CPU.
#   SAPIENS2_WORKFLOW_DATA=/tmp/seg python tools/train.py THIS_FILE
_base_ = ['../../../configs/_base_/default_runtime.py']

data_root = '{{$SAPIENS2_WORKFLOW_DATA:data/tiny_seg}}'
class_names = ('background', 'rectangle', 'disc')

model = dict(
    type='mmseg.EncoderDecoder',
    data_preprocessor=dict(
        type='mmseg.SegDataPreProcessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        size=(64, 64),
        pad_val=0,
        seg_pad_val=255),
    backbone=dict(
        type='Sapiens2',
        arch=dict(embed_dims=32, num_layers=2, num_heads=2,
                  feedforward_channels=64, num_tokenizer_layers=1),
        img_size=(64, 64),
        patch_size=16,
        out_type='featmap',
        out_indices=[-1],
        init_cfg=None),
    decode_head=dict(
        type='mmseg.FCNHead',
        in_channels=32,
        channels=32,
        num_convs=1,
        concat_input=False,
        dropout_ratio=0.1,
        num_classes=3,
        norm_cfg=None,
        align_corners=False,
        loss_decode=dict(
            type='mmseg.CrossEntropyLoss', use_sigmoid=False,
            loss_weight=1.0)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='mmseg.LoadAnnotations'),
    dict(type='mmseg.RandomFlip', prob=0.5),
    dict(type='mmseg.PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='mmseg.LoadAnnotations'),
    dict(type='mmseg.PackSegInputs'),
]


def _dataset(split, pipeline):
    return dict(
        type='mmseg.BaseSegDataset',
        data_root=data_root,
        metainfo=dict(classes=class_names,
                      palette=[[128, 128, 128], [220, 0, 0], [0, 0, 220]]),
        data_prefix=dict(img_path=f'img_dir/{split}',
                         seg_map_path=f'ann_dir/{split}'),
        img_suffix='.png',
        seg_map_suffix='.png',
        pipeline=pipeline)


train_dataloader = dict(
    batch_size=2,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=_dataset('train', train_pipeline))
val_dataloader = dict(
    batch_size=2,
    num_workers=0,
    persistent_workers=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=_dataset('val', test_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(type='mmseg.IoUMetric', iou_metrics=['mIoU'])
test_evaluator = val_evaluator

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-2, betas=(0.9, 0.999),
                   weight_decay=0.1))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=2),
    dict(type='PolyLR', eta_min=0.0, power=1.0, by_epoch=False, begin=2,
         end=6),
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=6, val_interval=6)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

default_hooks = dict(
    logger=dict(type='LoggerHook', interval=1),
    checkpoint=dict(type='AtomicCheckpointHook', interval=3, by_epoch=False,
                    max_keep_ckpts=3, save_last=True),
    visualization=dict(type='mmseg.SegVisualizationHook', draw=False))
visualizer = dict(
    type='mmseg.SegLocalVisualizer',
    alpha=0.5,
    vis_backends=[dict(type='LocalVisBackend')],
    name='visualizer')
env_cfg = dict(dist_cfg=dict(backend='gloo'))
randomness = dict(seed=0, diff_rank_seed=False)
