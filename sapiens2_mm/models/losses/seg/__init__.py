"""Segmentation losses (the class-weighted CE is ``mmseg.CrossEntropyLoss``)."""
from .dice_loss import SegDiceLoss, present_class_dice_loss

__all__ = ['SegDiceLoss', 'present_class_dice_loss']
