# Fine-tune the tiny pose model of the bundled COCO sample from an exported
# pretraining backbone: the chain pretrain -> export -> fine-tune on a CPU.
#   python tools/train.py configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py
#   python tools/model_converters/export_pretrain.py \
#       work_dirs/sapiens2-tiny_pretrain-cpu-64x48/iter_40.pth \
#       work_dirs/sapiens2_tiny_pretrain.safetensors
#   python tools/train.py configs/pretrain/sapiens2-tiny_finetune-pose_cocosample-128x96.py
# Another export of the same tiny arch: --cfg-options
# model.backbone.init_cfg.checkpoint=FILE. For an official size, use a
# configs/pose/ config with the same override (docs/pretrain.md).
_base_ = ['../pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py']
pretrained = 'work_dirs/sapiens2_tiny_pretrain.safetensors'
# the arch of configs/pretrain/sapiens2-tiny_pretrain-cpu-64x48.py
tiny_arch = dict(embed_dims=32, num_layers=2, num_heads=4,
                 feedforward_channels=64, num_tokenizer_layers=1)
model = dict(
    backbone=dict(arch=dict(_delete_=True, **tiny_arch),
                  init_cfg=dict(_delete_=True, type='Pretrained',
                                checkpoint=pretrained)),
    head=dict(in_channels=32))
