# Linear probe of a pretrained backbone: 29-class body-part segmentation with
# the backbone frozen (frozen_stages = all blocks, final norm included) and a
# single 1x1 convolution (mmseg FCNHead with no conv layers) on its stride-16
# features; the logits are upsampled to the label size in the loss. This
# version trains on the bundled seg sample with the tiny pretraining arch:
#   python tools/train.py configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py
#   python tools/model_converters/export_pretrain.py \
#       work_dirs/sapiens2-tiny_pretrain-cpu-64x48/iter_40.pth \
#       work_dirs/sapiens2_tiny_pretrain.safetensors
#   python tools/train.py configs/pretrain/sapiens2-tiny_linear-probe_seg29sample-128x96.py
# For any seg29 folder, set train/val_dataloader.dataset.data_root; for an
# official size, copy the backbone/head lines into a configs/seg/ config.
_base_ = ['../seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py']
pretrained = 'work_dirs/sapiens2_tiny_pretrain.safetensors'
tiny_arch = dict(_delete_=True, embed_dims=32, num_layers=2, num_heads=4,
                 feedforward_channels=64, num_tokenizer_layers=1)
model = dict(
    backbone=dict(arch=tiny_arch, frozen_stages=2,
                  init_cfg=dict(_delete_=True, type='Pretrained',
                                checkpoint=pretrained)),
    decode_head=dict(
        _delete_=True, type='mmseg.FCNHead', in_channels=32, channels=32,
        num_convs=0, concat_input=False, dropout_ratio=0.0, num_classes=29,
        align_corners=False,
        loss_decode=dict(type='mmseg.CrossEntropyLoss', loss_weight=1.0)))
optim_wrapper = dict(
    _delete_=True, type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-2, weight_decay=0.0))
