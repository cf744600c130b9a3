"""sapiens2_mm.utils.atomic_file: complete-or-nothing outputs."""
import os
import stat

import pytest

from sapiens2_mm.utils.atomic_file import atomic_output, default_file_mode


def test_failed_block_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / 'out.bin'
    path.write_bytes(b'old')
    with pytest.raises(RuntimeError):
        with atomic_output(str(path)) as tmp:
            with open(tmp, 'wb') as f:
                f.write(b'new but incomplete')
            raise RuntimeError('interrupted')
    assert path.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['out.bin']


def test_finished_block_replaces_with_the_mode_open_gives(tmp_path):
    old_mask = os.umask(0o027)
    try:
        assert default_file_mode() == 0o640
        path = tmp_path / 'out.bin'
        with atomic_output(str(path)) as tmp:
            assert os.path.dirname(tmp) == str(tmp_path)
            assert os.path.basename(tmp).startswith('.out.bin.')
            with open(tmp, 'wb') as f:
                f.write(b'new')
        with open(tmp_path / 'plain.bin', 'wb') as f:  # what open() gives
            f.write(b'x')
    finally:
        os.umask(old_mask)
    assert path.read_bytes() == b'new'
    assert stat.S_IMODE(os.stat(path).st_mode) == stat.S_IMODE(
        os.stat(tmp_path / 'plain.bin').st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ['out.bin', 'plain.bin']
