"""Give freed host memory back to the system between large steps.

glibc's allocator serves blocks of a few MB from its heap once such a block
has been freed (its mmap threshold grows with the largest freed block, up to
32 MB), and keeps freed heap pages in the process. Materialising an FSDP unit
and resharding it frees blocks of a unit's size, over and over; without a
trim the process keeps them all: measured on 2 CPU ranks with a 450 MB model
(tools/benchmarks/fsdp_memory.py), 400 MB of resident memory per rank after
a meta start that holds 222 MB of parameter shards.
"""
import ctypes
import ctypes.util
import functools


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    name = ctypes.util.find_library('c')
    if name is None:
        return None
    trim = getattr(ctypes.CDLL(name), 'malloc_trim', None)
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
    return trim  # None outside glibc (musl, macOS): nothing to do


def release_freed_host_memory() -> None:
    """``malloc_trim(0)`` where the C library has it."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
