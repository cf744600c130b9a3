"""A test-only hook that parks training at a known iteration for a signal.

``WaitForSigintHook(at_iter=N, marker=PATH)`` runs after every other
``after_train_iter`` hook (the checkpoint hook included), so when iteration N
ends its checkpoint is complete; it then writes ``marker`` and sleeps until a
signal handler raises (tools/train.py turns SIGINT into KeyboardInterrupt).
A test waits for ``marker`` and sends the signal: it always lands at the same
point, whatever the machine's load. No clock is raced: the hook waits as long
as the process that started the run (the test) is alive, and gives up only
once it is gone.
"""
import os
import time

from mmengine.hooks import Hook

from sapiens2_mm.registry import HOOKS


@HOOKS.register_module()
class WaitForSigintHook(Hook):
    priority = 'LOWEST'

    def __init__(self, at_iter: int, marker: str):
        self.at_iter = at_iter
        self.marker = marker

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        if runner.iter + 1 != self.at_iter:
            return
        parent = os.getppid()
        with open(self.marker, 'w') as f:
            f.write(str(os.getpid()))
        while os.getppid() == parent:  # reparented once the test is gone
            time.sleep(0.05)  # the SIGINT handler raises from here
        raise RuntimeError('the test that started this run is gone')
