"""Small composable layers of the Sapiens2 transformer and its heads."""
from .attention import GroupedQueryAttention
from .layer_scale import LayerScale
from .norms import RMSNorm2d, build_rms_norm
from .patch_embed import PatchEmbed
from .patch_masking import (
    PatchMask,
    check_mask_ratio,
    mask_from_ids_keep,
    num_kept_patches,
    random_patch_mask,
)
from .rope import RopePositionEmbedding, apply_rope
from .swiglu import SwiGLUFFN
from .tokenizer import WindowTokenizer
from .transformer_layer import Sapiens2Block

__all__ = [
    'GroupedQueryAttention', 'LayerScale', 'RMSNorm2d', 'build_rms_norm',
    'PatchEmbed', 'RopePositionEmbedding', 'apply_rope', 'SwiGLUFFN',
    'WindowTokenizer', 'Sapiens2Block', 'PatchMask', 'check_mask_ratio',
    'mask_from_ids_keep', 'num_kept_patches', 'random_patch_mask'
]
