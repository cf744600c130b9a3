"""Tools refuse outputs that would destroy their input or cannot be written,
before doing any work."""
import json
import os.path as osp
import shutil
import subprocess
import sys

import pytest

from sapiens2_mm.utils.output_paths import OutputPathError, check_output_file
from tests.conftest import COCO_DIR, REPO_DIR, load_tool, subprocess_budget
from tests.test_tools.workflow_utils import WORKFLOW_CFG

CONVERTER = osp.join(REPO_DIR, 'tools', 'dataset_converters',
                     'coco_wholebody_to_sapiens308.py')
WHOLEBODY = osp.join(COCO_DIR, 'test_coco_wholebody.json')


@pytest.fixture
def blocked(tmp_path):
    """A path below a regular file: no folder can be created there."""
    blocker = tmp_path / 'a_file'
    blocker.write_text('x')
    return str(blocker / 'out')


def test_converter_refuses_to_overwrite_its_input(tmp_path):
    src = str(tmp_path / 'wb.json')
    shutil.copy(WHOLEBODY, src)
    with open(src) as f:
        before = f.read()
    for argv in ([src, src], [src, src, '--overwrite'],
                 [src, osp.join(str(tmp_path), '.', 'wb.json')]):
        proc = subprocess.run([sys.executable, CONVERTER, *argv],
                              capture_output=True, text=True,
                              timeout=subprocess_budget(10))
        assert proc.returncode == 2 and 'is the input file' in proc.stderr
    with open(src) as f:
        assert f.read() == before
    # an earlier output is kept unless --overwrite
    out = str(tmp_path / 'out.json')
    tool = load_tool('dataset_converters/coco_wholebody_to_sapiens308')
    assert tool.main([src, out]) == 0
    with pytest.raises(SystemExit):
        tool.main([src, out])
    assert tool.main([src, out, '--overwrite']) == 0
    with open(out) as f:
        assert len(json.load(f)['annotations']) > 0


def test_check_output_file_errors(tmp_path, blocked):
    with pytest.raises(OutputPathError, match='not writable'):
        check_output_file(osp.join(blocked, 'x.png'))
    with pytest.raises(OutputPathError, match='is a folder'):
        check_output_file(str(tmp_path))


def test_export_refuses_unwritable_output_before_building(blocked,
                                                          monkeypatch):
    export_model = load_tool('deployment/export_model')

    def no_build(*args, **kwargs):
        raise AssertionError('the model was built before the output check')

    monkeypatch.setattr(export_model, 'init_model', no_build)
    with pytest.raises(SystemExit, match='--output folder .* not writable'):
        export_model.main([WORKFLOW_CFG, '--output', blocked])


def test_analysis_tools_refuse_unwritable_outputs_first(tmp_path, blocked,
                                                        monkeypatch):
    analyze_logs = load_tool('analysis_tools/analyze_logs')

    def no_read(*args, **kwargs):
        raise AssertionError('logs were read before the output check')

    monkeypatch.setattr(analyze_logs, 'load_series', no_read)
    with pytest.raises(SystemExit, match='--out image'):
        analyze_logs.main(['plot_curve', str(tmp_path), '--out',
                           osp.join(blocked, 'curves.png')])
    browse = load_tool('analysis_tools/browse_dataset')
    monkeypatch.setattr(browse, 'build_visualizer', no_read)
    with pytest.raises(SystemExit, match='--output-dir'):
        browse.main([WORKFLOW_CFG, '--output-dir', blocked])
    print_config = load_tool('analysis_tools/print_config')
    cfg_copy = str(tmp_path / 'cfg.py')
    shutil.copy(WORKFLOW_CFG, cfg_copy)
    with pytest.raises(SystemExit, match='is the input file'):
        print_config.main([cfg_copy, '--save-path', cfg_copy])
