"""FSDP wrapping and activation-checkpointing policies for Sapiens2 models.

Registered in mmengine's root ``FUNCTIONS`` registry, where
``MMFullyShardedDataParallel`` (``auto_wrap_policy``) and ``FSDPStrategy``
(``activation_checkpointing.check_fn``) look names up, so the strategy configs
in ``configs/_base_/strategies/`` can name them. Each transformer block
(trunk and 4K tokenizer) becomes one FSDP unit: its parameters are gathered
just before it runs and freed after, which is what lets the 1B/5B models fit.
"""
from mmengine.registry import FUNCTIONS
from torch import nn

from ...models.layers import Sapiens2Block


@FUNCTIONS.register_module()
def sapiens2_block_wrap_policy(module: nn.Module, recurse: bool,
                               nonwrapped_numel: int = 0) -> bool:
    """FSDP ``auto_wrap_policy``: one unit per :class:`Sapiens2Block`.

    Args:
        module: candidate module.
        recurse: True while FSDP asks whether to descend into ``module``.
        nonwrapped_numel: parameters not yet wrapped (unused).
    """
    if recurse:
        return True
    return isinstance(module, Sapiens2Block)


@FUNCTIONS.register_module()
def sapiens2_block_checkpoint_fn(module: nn.Module) -> bool:
    """``check_fn`` of FSDPStrategy activation checkpointing: every block."""
    return isinstance(module, Sapiens2Block)
