"""Build a runner for a prepared config and run it cleanly, one process of
a distributed job or alone (used by ``tools/train.py`` and ``tools/test.py``).
"""
import os
import signal
import sys

import torch.distributed as torch_dist
from mmengine.config import Config
from mmengine.device import get_device
from mmengine.dist import is_distributed

from ...registry import RUNNERS
from .quiet_runner import Sapiens2FlexibleRunner, Sapiens2Runner

QUIET_RUNNERS = {'Runner': Sapiens2Runner,
                 'FlexibleRunner': Sapiens2FlexibleRunner}


def build_runner(cfg: Config):
    """Runner, FlexibleRunner (configs with a ``strategy``) or ``runner_type``.

    The two mmengine runners are sapiens2_mm's subclasses that keep the config
    dump and the environment report in the log file, off the console, and
    drop named upstream notices (:mod:`.quiet_runner`).
    """
    if cfg.get('runner_type') in QUIET_RUNNERS:  # the strategy snippets
        return QUIET_RUNNERS[cfg.runner_type].from_cfg(cfg)
    if 'runner_type' in cfg:
        return RUNNERS.build(cfg)
    if cfg.get('strategy') is not None:
        return Sapiens2FlexibleRunner.from_cfg(cfg)
    return Sapiens2Runner.from_cfg(cfg)


def prepare_cpu_distributed(cfg: Config) -> None:
    """Let ``--launcher pytorch`` run on CPU-only machines (gloo).

    mmengine's ``init_dist`` calls ``torch.cuda.set_device`` unconditionally
    and wraps DDP with ``device_ids=[LOCAL_RANK]``; both fail without a GPU.
    Here the process group is initialized first (the Runner then skips its own
    init) and DDP gets ``device_ids=None``, as torch requires for CPU modules.
    """
    if cfg.get('launcher') != 'pytorch' or get_device() != 'cpu':
        return
    dist_cfg = cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})
    if dist_cfg.get('backend', 'nccl') != 'gloo':
        print(f'No GPU: using the gloo backend instead of '
              f'{dist_cfg.get("backend", "nccl")!r}.', file=sys.stderr)
        dist_cfg['backend'] = 'gloo'
    if not torch_dist.is_initialized():
        torch_dist.init_process_group(**dist_cfg)
    wrapper = cfg.get('model_wrapper_cfg') or dict(
        type='MMDistributedDataParallel')
    wrapper.setdefault('device_ids', None)
    cfg.model_wrapper_cfg = wrapper


def wait_for_all_ranks() -> None:
    """Barrier after a finished run, so that no rank tears its connections
    down while another is still in a collective (gloo aborts then)."""
    if is_distributed():
        torch_dist.barrier()


def cleanup_distributed() -> None:
    """Destroy the process group before exit.

    mmengine leaves it alive; with gloo the process can then abort at
    interpreter shutdown ("terminate called without an active exception").
    """
    if is_distributed():
        torch_dist.destroy_process_group()


def exit_launched_process(code: int = 0) -> None:
    """End a process started by a distributed launcher without interpreter
    teardown, after its run finished and :func:`cleanup_distributed` ran.

    PyTorch defect (pytorch/pytorch#190489): a background torch thread can
    release a tensor while ``Py_FinalizeEx`` runs; CPython then ends that
    thread and its unwind calls ``std::terminate``, so a rank whose run had
    finished aborts ("terminate called without an active exception", exit
    -6) and torchrun reports the whole job as failed. Seen once in a full
    test-suite run, after an FSDP run had trained, validated and saved.
    Logs and outputs are flushed first; outside a launcher (``WORLD_SIZE``
    unset or 1) this returns and the interpreter exits normally.
    """
    if int(os.environ.get('WORLD_SIZE', '1')) <= 1:
        return
    import logging
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def global_rank() -> int:
    """This process's rank from the launcher's environment (0 if none)."""
    for name in ('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'):
        if os.environ.get(name, '').isdigit():
            return int(os.environ[name])
    return 0


class InterruptFlag:
    """Records that SIGINT (Ctrl-C) or SIGTERM (``scancel``, a Slurm time
    limit or pre-emption, ``kill``) arrived and raises KeyboardInterrupt, so
    that a terminated run stops like an interrupted one: the work-dir lock
    released, the resume command printed.

    mmengine formats the config with yapf under a bare ``except:`` while it
    saves a checkpoint, so a signal that lands there surfaces as a
    ``SyntaxError('Failed to format the config file')``; the flag tells the
    two apart.

    Attributes:
        seen: a signal arrived.
        signal: its name (``'SIGINT'`` / ``'SIGTERM'``), else None.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.seen = False
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for signum in self.SIGNALS:
            # only where nobody else installed a handler
            if signal.getsignal(signum) in (signal.default_int_handler,
                                            signal.SIG_DFL):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc):
        for signum, previous in self._previous.items():
            if signum == signal.SIGTERM and self.signal == 'SIGTERM':
                # stopping: a repeated SIGTERM (the launcher forwards the
                # job's) must not cut the clean-up short
                previous = signal.SIG_IGN
            signal.signal(signum, previous)
        self._previous = {}
        return False

    def _handle(self, signum, frame):
        if self.seen and signum == signal.SIGTERM:
            # a job's processes all get SIGTERM, and a launcher (torchrun)
            # forwards it again: stop once, do not break the clean-up
            return
        self.seen = True
        self.signal = signal.Signals(signum).name
        raise KeyboardInterrupt
