"""Shared fixtures: paths to bundled data and a registered default scope."""
import os.path as osp

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


@pytest.fixture
def one_torch_thread():
    """Run the test with one torch thread (restored after): tiny models run
    several times faster than with threads fighting other processes for a
    shared CPU. Use as ``pytestmark = pytest.mark.usefixtures(...)``."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def parity_file():
    """Path of a file in tests/data/official_parity."""
    return lambda name: osp.join(PARITY_DIR, name)


@pytest.fixture
def repo_path():
    """Path relative to the repository root."""
    return lambda *parts: osp.join(REPO_DIR, *parts)
