"""sapiens2_mm's runners: two runs in one process keep their own logs."""
import pytest

from tests.conftest import load_tool
from tests.test_tools.workflow_utils import WORKFLOW_CFG, make_data, scalars


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    return make_data(str(tmp_path_factory.mktemp('runner') / 'data'))


def test_second_run_in_one_process_logs_into_its_own_folder(
        data, tmp_path, monkeypatch):
    """The workflow config names its visualizer 'visualizer' (as stock
    mmpose / mmseg configs do); mmengine would hand the second run the first
    run's visualizer, writing its scalars into the first run's log folder."""
    train_tool = load_tool('train')
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA', data)
    first, second = str(tmp_path / 'a'), str(tmp_path / 'b')
    train_tool.main([WORKFLOW_CFG, '--work-dir', first])
    first_log = scalars(first)
    assert [e['step'] for e in first_log if 'loss' in e] == [1, 2, 3, 4, 5, 6]
    train_tool.main([WORKFLOW_CFG, '--work-dir', second])
    assert [e['step'] for e in scalars(second) if 'loss' in e] == [
        1, 2, 3, 4, 5, 6]
    assert scalars(first) == first_log
