"""Small composable layers of the Sapiens2 transformer and its heads."""
from .attention import GroupedQueryAttention
from .layer_scale import LayerScale
from .norms import RMSNorm2d, build_rms_norm
from .patch_embed import PatchEmbed
from .rope import RopePositionEmbedding, apply_rope
from .swiglu import SwiGLUFFN
from .tokenizer import WindowTokenizer
from .transformer_layer import Sapiens2Block

__all__ = [
    'GroupedQueryAttention', 'LayerScale', 'RMSNorm2d', 'build_rms_norm',
    'PatchEmbed', 'RopePositionEmbedding', 'apply_rope', 'SwiGLUFFN',
    'WindowTokenizer', 'Sapiens2Block'
]
