"""Check a ``--device`` value before any work starts."""
import torch

from ..utils.user_errors import OptionError


def check_device(device: str) -> torch.device:
    """The torch device named by ``device``, if this machine has it.

    Raises:
        ValueError: an unknown name (``'gpu'``), or a device this machine does
            not have (``cuda:0`` without a GPU, ``cuda:3`` with two GPUs),
            with what is available.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise OptionError(
            f'Unknown device {device!r}: use "cpu", "cuda", "cuda:N" or '
            '"mps".') from None
    if dev.type == 'cpu':
        return dev
    if dev.type == 'cuda':
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise OptionError(
                f'Device {device!r} asked for, but no CUDA GPU is available '
                f'here (torch {torch.__version__}, CUDA build '
                f'{torch.version.cuda}). Use --device cpu.')
        if dev.index is not None and dev.index >= count:
            raise OptionError(
                f'Device {device!r} does not exist: this machine has {count} '
                f'CUDA GPU(s), cuda:0 to cuda:{count - 1}.')
        return dev
    if dev.type == 'mps':
        if not torch.backends.mps.is_available():
            raise OptionError(f'Device {device!r}: MPS is not available here. '
                             'Use --device cpu.')
        return dev
    raise OptionError(
        f'Device {device!r} is not supported for inference; use "cpu", '
        '"cuda", "cuda:N" or "mps".')
