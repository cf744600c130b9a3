"""Crop, blur and size checks of the multi-view pretraining pipeline."""
from .blur import RandomGaussianBlur
from .min_size import CheckMinImageSize
from .person_crop import PersonCentricResizedCrop

__all__ = ['RandomGaussianBlur', 'CheckMinImageSize',
           'PersonCentricResizedCrop']
