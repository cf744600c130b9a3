# Recipe "your own classes" (docs/custom_data.md): the tiny Sapiens2 body-part
# model on a 20-class label set. Every place that depends on the classes is
# set from the one `metainfo` below: the dataset, the head, the loss class
# weights, the annotation loader, the flip augmentation and the flip test.
# tools/train.py and tools/test.py check that they agree (class_check.py):
# inheriting the 29-class pipelines or weights is refused, naming each place.
# Label maps: single-channel PNGs with values 0..19 (255 = ignore) under
# {data_root}/labels, images under {data_root}/images (same names).
#   python tools/train.py configs/examples/seg/sapiens2-tiny_1xb2-30_parts20-128x96.py
_base_ = ['../../seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py']
data_root = 'data/parts20/'
metainfo = dict(
    classes=('Background', 'Apparel', 'Eyeglass', 'Face_Neck', 'Hair',
             'Left_Foot', 'Left_Hand', 'Left_Lower_Arm', 'Left_Upper_Arm',
             'Left_Leg', 'Right_Foot', 'Right_Hand', 'Right_Lower_Arm',
             'Right_Upper_Arm', 'Right_Leg', 'Lower_Clothing',
             'Upper_Clothing', 'Torso', 'Lips', 'Inner_Mouth'),
    palette=[[50, 50, 50], [255, 218, 0], [14, 204, 182], [128, 200, 255],
             [255, 0, 109], [189, 0, 204], [255, 0, 218], [0, 160, 204],
             [255, 109, 0], [0, 255, 145], [204, 131, 0], [255, 0, 0],
             [72, 255, 0], [32, 72, 204], [189, 204, 0], [72, 0, 255],
             [0, 128, 72], [14, 204, 0], [235, 205, 119], [157, 113, 143]],
    class_weight=[0.1, 10, 10, 3, 2, 4, 4, 2, 3, 2, 4, 4, 2, 3, 2, 1, 1, 1,
                  10, 10],
    # horizontal flip: Left_X <-> Right_X (class_check compares these with
    # the class names)
    flip_swap_pairs=[(5, 10), (6, 11), (7, 12), (8, 13), (9, 14)])
num_classes = len(metainfo['classes'])
height, width = 128, 96

model = dict(decode_head=dict(
    num_classes=num_classes,
    loss_decode=[
        dict(type='mmseg.CrossEntropyLoss', loss_name='loss_ce',
             class_weight=metainfo['class_weight'], reduction='none',
             loss_weight=1.0),
        dict(type='SegDiceLoss', loss_name='loss_dice', loss_weight=1.0),
    ]))
train_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='LoadSegAnnotations', num_classes=num_classes),
    dict(type='SegResize', height=height, width=width),
    dict(type='mmseg.RandomFlip', prob=0.5, direction='horizontal',
         swap_seg_labels=metainfo['flip_swap_pairs']),
    dict(type='mmseg.PackSegInputs'),
]
test_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='SegResize', height=height, width=width, test_mode=True),
    dict(type='LoadSegAnnotations', num_classes=num_classes),
    dict(type='mmseg.PackSegInputs'),
]
dataset = dict(type='SegDataset', data_root=data_root, metainfo=metainfo,
               data_prefix=dict(img_path='images', seg_map_path='labels'))
train_dataloader = dict(
    dataset=dict(_delete_=True, **dataset, pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(_delete_=True, **dataset, test_mode=True,
                 pipeline=test_pipeline))
test_dataloader = val_dataloader
# flip test (tools/test.py --tta)
tta_model = dict(swap_pairs=metainfo['flip_swap_pairs'])
tta_pipeline = [
    dict(type='Sapiens2LoadImage'),
    dict(type='TestTimeAug',
         transforms=[
             [dict(type='SegResize', height=height, width=width,
                   test_mode=True)],
             [dict(type='mmseg.RandomFlip', prob=0.0, direction='horizontal'),
              dict(type='mmseg.RandomFlip', prob=1.0, direction='horizontal')],
             [dict(type='LoadSegAnnotations', num_classes=num_classes)],
             [dict(type='mmseg.PackSegInputs')],
         ]),
]
