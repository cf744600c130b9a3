"""Engine hooks: strict checkpoint loading and RNG-state checkpointing."""
from .checked_load_hook import CheckedCheckpointLoadHook, map_official_keys
from .rng_state_hook import RNGStateHook, get_rng_state, set_rng_state

__all__ = [
    'CheckedCheckpointLoadHook', 'map_official_keys', 'RNGStateHook',
    'get_rng_state', 'set_rng_state'
]
