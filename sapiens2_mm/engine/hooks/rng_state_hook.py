"""Save the random-number-generator states with each checkpoint and restore them.

mmengine checkpoints hold weights, optimizer, scheduler and iteration but no RNG
state, so after ``--resume`` dropout masks and random augmentations start over
from the seed and the run diverges from an uninterrupted one. This hook stores
the Python, NumPy and torch (CPU and, when present, CUDA) generator states in
``checkpoint['rng_state']`` and restores them on resume.

Timing matters: on resume mmengine's ``IterBasedTrainLoop`` first pulls the
already-trained batches through the data pipeline (drawing random numbers), so
the states are restored just before the first *new* batch is fetched.

Data-loader workers (``num_workers > 0``) need no stored state: mmengine seeds
worker ``i`` with ``seed + i`` (plus ``num_workers * rank``) whenever the
loader starts them, and torch hands out the batches round-robin, so while
the loop skips the trained batches every worker redraws exactly the numbers
it drew in the uninterrupted run. The resumed run then continues both the
workers' and the main process's streams exactly (tested with 0 and 2 workers
in ``tests/test_engine/test_rng_state_hook.py``). This needs a fixed
``randomness.seed`` (``configs/_base_/default_runtime.py`` sets 0): with
``seed=None`` mmengine draws a new seed per start and builds the resumed
run's workers with it before it reads the checkpoint's seed.
"""
import random
from typing import Optional

import numpy as np
import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook

from ...registry import HOOKS

KEY = 'rng_state'


def get_rng_state() -> dict:
    """Current Python, NumPy, torch (and CUDA) generator states."""
    state = dict(python=random.getstate(), numpy=np.random.get_state(),
                 torch=torch.get_rng_state())
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore states produced by :func:`get_rng_state`."""
    random.setstate(state['python'])
    np.random.set_state(state['numpy'])
    torch.set_rng_state(state['torch'])
    if 'cuda' in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state['cuda'])


class _RestoreBeforeFirstNewBatch:
    """Iterator wrapper: after ``skip`` fetches, restore RNG, then unwrap."""

    def __init__(self, loop, state: dict):
        self.loop = loop
        self.inner = loop.dataloader_iterator
        self.skip = loop.iter
        self.state = state

    def __iter__(self):
        return self

    def __next__(self):
        if self.skip > 0:
            self.skip -= 1
            return next(self.inner)
        set_rng_state(self.state)
        self.loop.dataloader_iterator = self.inner
        return next(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@HOOKS.register_module()
class RNGStateHook(Hook):
    """Checkpoint and restore RNG states for an exact resume.

    mmengine saves checkpoints from rank 0 only (``Runner.save_checkpoint`` is
    ``master_only``), so only single-process runs store and restore states; a
    distributed resume keeps mmengine's behavior (reseed). Distributed jobs
    use data-loader workers anyway, whose generators no checkpoint holds.
    """

    priority = 'VERY_LOW'

    def __init__(self):
        self._pending: Optional[dict] = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """Store the generator states of a single-process run."""
        if get_world_size() == 1:
            checkpoint[KEY] = get_rng_state()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """Keep the saved states until training restarts (resume only)."""
        if not getattr(runner, '_resume', False) or get_world_size() != 1:
            return  # load_from for fine-tuning: start a fresh random stream
        self._pending = checkpoint.get(KEY)
        if self._pending is None:
            runner.logger.warning(
                'The checkpoint has no RNG state (saved without RNGStateHook); '
                'random augmentation and dropout restart from the seed.')

    def before_train(self, runner) -> None:
        """Arrange the restore after the loop skips the trained batches."""
        if self._pending is None:
            return
        loop = runner.train_loop
        if hasattr(loop, 'dataloader_iterator'):
            loop.dataloader_iterator = _RestoreBeforeFirstNewBatch(
                loop, self._pending)
        else:  # epoch-based loops re-create the iterator: restore now
            set_rng_state(self._pending)
        self._pending = None
