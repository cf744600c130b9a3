"""Pretraining heads: pixel reconstruction, DINO projection and their losses."""
from .dino_cls_loss import DINOClsLoss, sinkhorn_knopp
from .dino_head import DINOHead
from .koleo_loss import KoLeoLoss, koleo_loss
from .rect_mae_head import RectMAEHead, patchify, unpatchify

__all__ = [
    'DINOClsLoss', 'sinkhorn_knopp', 'DINOHead', 'KoLeoLoss', 'koleo_loss',
    'RectMAEHead', 'patchify', 'unpatchify'
]
