"""Keep ``torch.load(weights_only=True)`` on while mmengine checkpoints load.

Since torch 2.6 ``torch.load`` defaults to weights-only unpickling, and mmengine
checkpoints carry numpy arrays, numpy scalars and ``HistoryBuffer`` objects in
``meta`` and ``message_hub``; ``load_checkpoint`` and Runner resume then fail with
``Unsupported global``. Instead of turning the protection off for the whole process
(``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` lets a malicious .pth run code) we allow
exactly the classes mmengine writes. None of them execute code when rebuilt.
"""
import numpy as np
import torch


def _mmengine_checkpoint_globals() -> list:
    from mmengine.logging.history_buffer import HistoryBuffer
    multiarray = np.core.multiarray
    allowed = [
        HistoryBuffer,
        multiarray._reconstruct,
        multiarray.scalar,
        np.ndarray,
        np.dtype,
    ]
    # numpy>=1.25 pickles dtypes by their concrete class (``Float64DType``...).
    dtypes = getattr(np, 'dtypes', None)
    if dtypes is not None:
        allowed += [
            getattr(dtypes, name) for name in dir(dtypes)
            if name.endswith('DType') and isinstance(getattr(dtypes, name), type)
        ]
    return allowed


def _history_buffer_state(self) -> dict:
    """Pickle state of a ``HistoryBuffer`` without its statistics methods.

    mmengine pickles ``_statistics_methods`` (functions, stored as
    ``getattr(HistoryBuffer, 'min')``), and ``getattr`` can never be allowlisted
    safely. The methods live on the class and ``__setstate__`` restores them, so
    leaving them out loses nothing.
    """
    return {k: v for k, v in self.__dict__.items() if k != 'statistics_methods'}


def make_history_buffer_weights_only_safe() -> None:
    """Patch ``HistoryBuffer.__getstate__`` so new checkpoints need no getattr.

    Checkpoints written by plain mmengine (without sapiens2_mm imported) still
    hold ``getattr`` and are refused by weights-only loading; resave them, or
    load them with ``weights_only=False`` only if you trust their source.
    """
    from mmengine.logging.history_buffer import HistoryBuffer
    HistoryBuffer.__getstate__ = _history_buffer_state


def allow_mmengine_checkpoint_globals() -> None:
    """Add the globals of mmengine checkpoints to torch's weights-only allowlist.

    Idempotent. Does nothing on torch versions without ``add_safe_globals``.
    """
    make_history_buffer_weights_only_safe()
    add = getattr(torch.serialization, 'add_safe_globals', None)
    if add is None:
        return
    known = set(map(id, torch.serialization.get_safe_globals()))
    add([g for g in _mmengine_checkpoint_globals() if id(g) not in known])
