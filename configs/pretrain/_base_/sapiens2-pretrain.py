# Sapiens2 pretraining algorithm: masked pixel reconstruction (MAE, 75 % of
# each global crop's patches dropped from the student) + DINO CLS
# self-distillation against an EMA teacher (Sinkhorn-Knopp targets) + KoLeo.
# Leaf configs set the arch and widths. Teacher momentum is written in DINO's
# convention m (teacher <- m * teacher + (1 - m) * student); mmengine's EMA
# `momentum` is the student's weight 1 - m.
embed_dims = 1536
num_prototypes = 65536
model = dict(
    type='Sapiens2Pretrainer',
    data_preprocessor=dict(
        type='mmpretrain.SelfSupDataPreprocessor',
        mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375],
        to_rgb=True),
    backbone=dict(type='Sapiens2', arch='sapiens2_1b', img_size=(1024, 768),
                  patch_size=16, final_norm=True, use_tokenizer=False,
                  with_cp=True, init_cfg=None),
    neck=dict(type='RectMAEDecoder', in_channels=embed_dims,
              decoder_embed_dims=512, depth=8, num_heads=16, patch_size=16),
    head=dict(type='RectMAEHead', patch_size=16, norm_pix=False),
    dino_head=dict(type='DINOHead', in_channels=embed_dims,
                   hidden_channels=2048, bottleneck_channels=256,
                   num_prototypes=num_prototypes),
    dino_loss=dict(type='DINOClsLoss', out_dim=num_prototypes,
                   student_temp=0.1, teacher_norm='sinkhorn'),
    mask_ratio=0.75,
    teacher_momentum=0.992,
    mae_loss_weight=1.0,
    dino_loss_weight=1.0,
    koleo_loss_weight=0.1)
custom_hooks = [
    dict(type='PretrainScheduleHook', momentum_start=0.992, momentum_end=1.0,
         teacher_temp_start=0.04, teacher_temp_end=0.07,
         teacher_temp_warmup_iters=30000, freeze_prototypes_iters=1250),
    dict(type='RNGStateHook'),
    dict(type='PretrainReconstructionVisHook', interval=5000, num_images=4),
]
