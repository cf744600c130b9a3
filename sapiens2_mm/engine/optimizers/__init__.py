"""Optimizer wrappers and their constructors."""
from .amp_optim_wrapper import Sapiens2AmpOptimWrapper, use_sapiens2_amp
from .layer_decay_constructor import (
                                      Sapiens2LayerDecayOptimWrapperConstructor,
                                      sapiens2_layer_id,
)

__all__ = ['Sapiens2AmpOptimWrapper', 'Sapiens2LayerDecayOptimWrapperConstructor',
           'sapiens2_layer_id', 'use_sapiens2_amp']
