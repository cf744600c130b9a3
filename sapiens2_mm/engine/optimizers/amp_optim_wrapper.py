"""Mixed-precision optimizer wrapper whose loss scaling fits the dtype and
the model wrapper.

mmengine's ``AmpOptimWrapper`` (0.10.7) always scales the loss, and asserts
that a GPU exists. Its ``FSDPStrategy`` switches it to ``ShardedGradScaler``
only for a config whose type is spelled exactly ``'AmpOptimWrapper'``; the
prefixed ``'mmengine.AmpOptimWrapper'`` (how a config of another scope names
it) or a wrapper built outside the strategy keeps a plain ``GradScaler``.
Under FSDP that is wrong:

* a plain ``GradScaler`` checks only this rank's gradient shard for inf /
  NaN, so after an overflow on one rank the ranks skip different steps and
  their loss scales drift apart (``ShardedGradScaler`` all-reduces the
  check);
* bf16 gets a loss scaler too, which it never needs (bf16 has fp32's
  exponent range; the official bf16 recipes use none).

:class:`Sapiens2AmpOptimWrapper` picks the scaler from the autocast dtype:
none for bf16, ``ShardedGradScaler`` for fp16 under FSDP, ``GradScaler``
otherwise. :func:`use_sapiens2_amp` rewrites an optimizer-wrapper config to
it; ``tools/train.py`` (through ``prepare_train_config``) and
``Sapiens2FSDPStrategy`` call it, so the result does not depend on whether
``--amp`` or the config asked for mixed precision.
"""
from typing import Optional, Union

import torch
from mmengine.device import get_device
from mmengine.optim import AmpOptimWrapper, OptimWrapper
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from ...registry import OPTIM_WRAPPERS

AMP_TYPES = ('AmpOptimWrapper', 'mmengine.AmpOptimWrapper',
             'Sapiens2AmpOptimWrapper', 'sapiens2_mm.Sapiens2AmpOptimWrapper')
WRAPPER_TYPE = 'sapiens2_mm.Sapiens2AmpOptimWrapper'


def autocast_dtype(dtype: Union[str, torch.dtype, None],
                   device_type: str) -> torch.dtype:
    """The dtype autocast will use: ``dtype``, or the device's default
    (fp16 on CUDA, bf16 on the CPU) as mmengine's ``autocast`` does."""
    if isinstance(dtype, str):
        if dtype not in AmpOptimWrapper.valid_dtypes:
            raise ValueError(
                f'optim_wrapper.dtype must be one of '
                f'{AmpOptimWrapper.valid_dtypes}, got {dtype!r}')
        dtype = getattr(torch, dtype)
    if dtype is None:
        dtype = torch.get_autocast_dtype(device_type)
    return dtype


@OPTIM_WRAPPERS.register_module()
class Sapiens2AmpOptimWrapper(AmpOptimWrapper):
    """``AmpOptimWrapper`` with the loss scaling its dtype needs.

    Args:
        loss_scale: as ``AmpOptimWrapper`` (``'dynamic'``, a float initial
            scale or a dict of scaler arguments); ignored for bf16, which is
            never scaled.
        dtype: autocast dtype (``'bfloat16'``, ``'float16'``, ...); None is
            the device's autocast default.
        use_fsdp: the model is FSDP-sharded: fp16 uses ``ShardedGradScaler``
            (set by ``Sapiens2FSDPStrategy``).
        **kwargs: ``OptimWrapper`` arguments.
    """

    def __init__(self, loss_scale: Union[str, float, dict] = 'dynamic',
                 dtype: Union[str, torch.dtype, None] = None,
                 use_fsdp: bool = False, **kwargs) -> None:
        # upstream's __init__ asserts a GPU; the wrapper runs on the CPU too
        OptimWrapper.__init__(self, **kwargs)
        device_type = get_device()
        self.cast_dtype = autocast_dtype(dtype, device_type)
        self._scale_update_param: Optional[float] = None
        self.use_fsdp = use_fsdp
        scaled = self.cast_dtype == torch.float16
        if not scaled:  # bf16 / fp32: gradients never underflow to zero
            self.loss_scaler = torch.amp.GradScaler(device_type,
                                                    enabled=False)
            return
        if isinstance(loss_scale, float):
            self._scale_update_param = loss_scale
            settings = dict(init_scale=loss_scale)
        elif isinstance(loss_scale, dict):
            settings = dict(loss_scale)
        elif loss_scale == 'dynamic':
            settings = {}
        else:
            raise TypeError('loss_scale must be a float, a dict or '
                            f'"dynamic", got {loss_scale!r}')
        if use_fsdp:
            self.loss_scaler = ShardedGradScaler(device=device_type,
                                                 **settings)
        else:
            self.loss_scaler = torch.amp.GradScaler(device_type, **settings)

    @property
    def scales_loss(self) -> bool:
        """Whether the loss is scaled (fp16 only)."""
        return self.loss_scaler.is_enabled()


def use_sapiens2_amp(optim_wrapper: dict, sharded: bool) -> bool:
    """Make a mixed-precision optimizer-wrapper config a
    :class:`Sapiens2AmpOptimWrapper` (in place).

    Args:
        optim_wrapper: an ``optim_wrapper`` config dict.
        sharded: the model is FSDP-wrapped (fp16 then needs
            ``ShardedGradScaler``).

    Returns:
        Whether the config asks for mixed precision (and was rewritten).
    """
    if str(optim_wrapper.get('type', '')) not in AMP_TYPES:
        return False
    optim_wrapper['type'] = WRAPPER_TYPE
    optim_wrapper['use_fsdp'] = bool(sharded)
    return True
