"""Engine hooks (strict checkpoint loading, RNG-state checkpointing) and the
FSDP policies the strategy configs name."""
from .atomic_checkpoint_hook import AtomicCheckpointHook
from .checked_load_hook import CheckedCheckpointLoadHook, map_official_keys
from .dense_visualization_hook import DenseVisualizationHook
from .fsdp_policies import sapiens2_block_checkpoint_fn, sapiens2_block_wrap_policy
from .inference_speed_hook import InferenceSpeedHook
from .pretrain_schedule_hook import PretrainScheduleHook
from .pretrain_vis_hook import PretrainReconstructionVisHook, reconstruction_grid
from .rng_state_hook import RNGStateHook, get_rng_state, set_rng_state

__all__ = [
    'AtomicCheckpointHook', 'CheckedCheckpointLoadHook', 'map_official_keys',
    'DenseVisualizationHook', 'InferenceSpeedHook', 'PretrainScheduleHook',
    'PretrainReconstructionVisHook', 'reconstruction_grid', 'RNGStateHook',
    'get_rng_state', 'set_rng_state', 'sapiens2_block_wrap_policy',
    'sapiens2_block_checkpoint_fn'
]
