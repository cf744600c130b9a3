"""Shared fixtures: paths to bundled data and a registered default scope."""
import os.path as osp
from contextlib import contextmanager

import pytest

TESTS_DIR = osp.dirname(osp.abspath(__file__))
DATA_DIR = osp.join(TESTS_DIR, 'data')
REPO_DIR = osp.dirname(TESTS_DIR)
PARITY_DIR = osp.join(DATA_DIR, 'official_parity')


@pytest.fixture(autouse=True)
def _registered_scope():
    """Make 'sapiens2_mm' the current default scope before every test.

    Some tests build upstream objects (mmseg / mmpose metrics, Runners) that
    create another current scope; without this, whichever test runs next in
    the same worker would look our types up in that scope.
    """
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()


@contextmanager
def torch_threads(count: int):
    """torch runs with ``count`` threads inside the block, the earlier count
    restored after (a test must not leave its worker changed)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture
def one_torch_thread():
    """Run the test with one torch thread (restored after): tiny models run
    several times faster than with threads fighting other processes for a
    shared CPU. Use as ``pytestmark = pytest.mark.usefixtures(...)``."""
    with torch_threads(1):
        yield


@pytest.fixture
def official_vector_threads():
    """Run the test with 2 torch threads (restored after): the count at which
    this package's backbone reproduces the official tiny18 vectors exactly
    (max abs diff 0.0, 1K and 4K, on the AMD EPYC that reproduces them).
    float32 reductions split over another thread count round differently,
    and the 4K tokenizer amplifies it: 2.35e-5 at 1 thread, 8.3e-7 at 3,
    2.9e-6 at 4 (1K: 0.0 at 1-4). A test that left the worker at 1 thread
    failed the 4K parity test in a full run, depending on test order."""
    with torch_threads(2):
        yield


@pytest.fixture
def parity_file():
    """Path of a file in tests/data/official_parity."""
    return lambda name: osp.join(PARITY_DIR, name)


def official_output_sets(name: str) -> list:
    """The official code's outputs for ``tiny18_<name>_io.safetensors``'s
    input, one list per official run (``output_0``, ``output_1``, ...).

    The dense decoders amplify float32 rounding, so the official code itself
    gives outputs 1.0-2.1e-5 apart on two x86 CPUs with the same torch
    (tests/data/official_parity/README.md); a second run's outputs are kept in
    ``tiny18_<name>_io_run2.safetensors``. A reimplementation matches when it
    is within the bar of one of the official runs.
    """
    import glob

    from safetensors.torch import load_file
    paths = [osp.join(PARITY_DIR, f'tiny18_{name}_io.safetensors')]
    paths += sorted(glob.glob(
        osp.join(PARITY_DIR, f'tiny18_{name}_io_run*.safetensors')))
    sets = []
    for path in paths:
        io = load_file(path)
        sets.append([io[k] for k in sorted(io) if k.startswith('output_')])
    return sets


def max_diff_to_official(outputs, name: str) -> float:
    """Max abs difference of ``outputs`` (a tensor or a tuple of tensors,
    in the official order) to the nearest official run
    (:func:`official_output_sets`)."""
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs, )
    diffs = []
    for expected in official_output_sets(name):
        assert len(outs) == len(expected), (len(outs), len(expected))
        for got, ref in zip(outs, expected):
            assert got.shape == ref.shape, (got.shape, ref.shape)
        diffs.append(max((got - ref).abs().max().item()
                         for got, ref in zip(outs, expected)))
    return min(diffs)


@pytest.fixture
def repo_path():
    """Path relative to the repository root."""
    return lambda *parts: osp.join(REPO_DIR, *parts)
