"""Optimizer-wrapper constructors."""
from .layer_decay_constructor import (
                                      Sapiens2LayerDecayOptimWrapperConstructor,
                                      sapiens2_layer_id,
)

__all__ = ['Sapiens2LayerDecayOptimWrapperConstructor', 'sapiens2_layer_id']
