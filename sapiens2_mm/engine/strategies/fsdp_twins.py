"""FSDP units for an EMA teacher and the student parts it averages.

Upstream defect (torch FSDP1 as mmengine wraps it): parameters that are in
no unit of their own land in the root unit, whose parameters stay gathered
(unsharded) through the forward pass. The teacher's EMA update runs inside
the forward, so for root-unit parameters (patch embed, tokens, final norm,
DINO head) it wrote into the gathered copy, which FSDP frees at reshard
without writing back: those teacher parameters never changed.

A model that declares ``fsdp_twin_units()`` (the teacher's modules and the
student modules they average) has each of them wrapped as a unit of its own.
Twin units hold the same parameters in the same order, so their flat shards
line up rank by rank and the EMA update works on the local shards, with no
communication, like the Sapiens2 block units already did.
"""
from functools import partial
from typing import Callable, Optional, Union

from mmengine.registry import FUNCTIONS
from torch import nn


def resolve_policy(policy: Union[str, dict, Callable, None]
                   ) -> Optional[Callable]:
    """A ``auto_wrap_policy`` config (name, dict with ``type``, callable)
    as the callable MMFullyShardedDataParallel would build from it."""
    if policy is None or callable(policy):
        return policy
    with FUNCTIONS.switch_scope_and_registry(None):
        if isinstance(policy, str):
            found = FUNCTIONS.get(policy)
            kwargs = {}
        else:
            kwargs = dict(policy)
            kind = kwargs.pop('type')
            found = FUNCTIONS.get(kind) if isinstance(kind, str) else kind
    if found is None:
        raise ValueError(f'auto_wrap_policy {policy!r} is not registered.')
    return partial(found, **kwargs) if kwargs else found


def twin_wrap_policy(model: nn.Module, policy) -> Optional[Callable]:
    """``policy`` extended by the model's twin units, or None when the
    model declares none (the policy config is then used as it is)."""
    declare = getattr(model, 'fsdp_twin_units', None)
    if not callable(declare):
        return None
    twins = {id(m) for m in declare()}
    base = resolve_policy(policy)

    def wrap(module: nn.Module, recurse: bool, nonwrapped_numel: int) -> bool:
        if recurse:
            return True
        if id(module) in twins:
            return True
        return bool(base is not None and base(
            module=module, recurse=recurse,
            nonwrapped_numel=nonwrapped_numel))

    return wrap
