"""Necks between the backbone and the pretraining heads."""
from .rect_mae_decoder import RectMAEDecoder, sincos_pos_embed_2d

__all__ = ['RectMAEDecoder', 'sincos_pos_embed_2d']
