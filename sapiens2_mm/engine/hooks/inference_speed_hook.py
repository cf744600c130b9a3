"""``tools/test.py --compile / --dtype``: compile the network and/or run it
under bf16 autocast for the val/test loops."""
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from ...registry import HOOKS
from ...runtime import DTYPES, apply_speedups


@HOOKS.register_module()
class InferenceSpeedHook(Hook):
    """Apply :func:`sapiens2_mm.runtime.speedups.apply_speedups` before testing.

    The backbone / neck / head forwards are compiled and/or wrapped in
    autocast in place, so the model's ``test_step`` (and flip test, decoding,
    metrics) stay as they are. Applied once, before the first val or test
    loop. Training compiles through mmengine's own ``compile`` config field
    instead (docs/train_test.md).

    Args:
        compile: ``torch.compile`` the network (eager with a warning where no
            compiler is available).
        dtype: ``'fp32'`` or ``'bf16'``.

    Raises:
        ValueError: bf16 on a device without bf16 (when the loop starts).
    """
    priority = 'LOW'

    def __init__(self, compile: bool = False, dtype: str = 'fp32') -> None:
        if dtype not in DTYPES:
            raise ValueError(f'InferenceSpeedHook dtype must be one of '
                             f'{sorted(DTYPES)}, got {dtype!r}.')
        self.compile, self.dtype = compile, dtype
        self.applied = False

    def _apply(self, runner) -> None:
        if self.applied:
            return
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        apply_speedups(model, compile=self.compile, dtype=self.dtype)
        self.applied = True

    def before_test(self, runner) -> None:
        self._apply(runner)

    def before_val(self, runner) -> None:
        self._apply(runner)
