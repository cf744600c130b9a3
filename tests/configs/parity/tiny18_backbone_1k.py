# The tiny18 backbone of tests/data/official_parity/tiny18_1k.safetensors.
# Load other weights with --cfg-options model.init_cfg.checkpoint=PATH.
default_scope = 'sapiens2_mm'
tiny18_arch = dict(embed_dims=32, num_layers=18, num_heads=4,
                   feedforward_channels=128, num_tokenizer_layers=2)
model = dict(
    type='Sapiens2',
    arch=tiny18_arch,
    img_size=(128, 96),
    patch_size=16,
    final_norm=True,
    use_tokenizer=False,
    with_cls_token=True,
    out_type='featmap',
    out_indices=[-1],
    init_cfg=None,
)
input_shape = (2, 3, 128, 96)
