"""tools/dataset_converters/generate_synthetic_dense.py writes readable data."""
import os.path as osp

import numpy as np
import pytest

from sapiens2_mm.registry import DATASETS
from tests.conftest import load_tool


def _tool():
    return load_tool('dataset_converters/generate_synthetic_dense')


def test_cli_writes_every_layout_and_refuses_to_overwrite(tmp_path, capsys):
    out = str(tmp_path / 'synthetic')
    tool = _tool()
    tool.main([out, '--num-scenes', '2', '--height', '64', '--width', '48',
               '--normal-convention', 'opengl', '--normal-format', '.npz'])
    assert 'Wrote 2 scenes' in capsys.readouterr().out
    for task in ('Normal', 'Pointmap', 'Albedo'):
        dataset = DATASETS.build(dict(type=f'{task}Dataset', data_root=out,
                                      pipeline=[]))
        assert len(dataset) == 2
    normal = np.load(osp.join(out, 'normal', 'scene_00000.npz'))['normal']
    mask = np.linalg.norm(normal, axis=-1) > 0
    # OpenGL axes: normals toward the camera mostly have +z.
    assert (normal[mask, 2] > 0).mean() > 0.9
    with pytest.raises(FileExistsError):
        tool.main([out, '--num-scenes', '1', '--height', '64',
                   '--width', '48'])


def test_cli_refuses_a_negative_seed(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _tool().main([str(tmp_path / 'x'), '--seed', '-1'])
    assert '--seed must be >= 0' in capsys.readouterr().err
    assert not (tmp_path / 'x').exists()
