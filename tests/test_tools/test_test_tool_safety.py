"""tools/test.py never loses a finished test or an earlier file (issue 29):
--out refused before running when it is a folder or an existing file,
metrics written before the predictions, FSDP configs without a launcher,
user errors as one ``error:`` line."""
import errno
import json
import os.path as osp
import pickle

import pytest
import torch
from mmengine.config import Config

from .workflow_utils import REPO_DIR, TESTS_DIR, load_tool, make_data

test_tool = load_tool('test')
SEG_TINY = osp.join(REPO_DIR, 'configs', 'seg',
                    'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')

# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(scope='module')
def seg_checkpoint(tmp_path_factory):
    """Seeded random weights of the tiny seg config (.pth)."""
    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(0)
    path = str(tmp_path_factory.mktemp('ckpt') / 'random.pth')
    model = MODELS.build(Config.fromfile(SEG_TINY).model)
    torch.save({'state_dict': model.state_dict()}, path)
    return path


def _never_runs(monkeypatch):
    """Make building a runner fail the test: a refusal must come first."""
    from sapiens2_mm.engine import runners

    def build_runner(cfg):
        raise AssertionError('the test ran before the refusal')
    monkeypatch.setattr(runners, 'build_runner', build_runner)


# -- item 6: --out checked before running; metrics before predictions --

def test_out_that_is_a_folder_is_refused_before_running(tmp_path,
                                                        seg_checkpoint,
                                                        monkeypatch):
    """``--out preds.pkl`` naming a folder passed the check, ran the whole
    test and failed with IsADirectoryError: no metrics, no
    test_metrics.json."""
    _never_runs(monkeypatch)
    folder = tmp_path / 'preds.pkl'
    folder.mkdir()
    with pytest.raises(SystemExit, match=r'^error: .*preds\.pkl.* folder'):
        test_tool.main([SEG_TINY, seg_checkpoint, '--work-dir',
                        str(tmp_path / 'w'), '--out', str(folder)])


def test_out_that_exists_is_never_replaced(tmp_path, seg_checkpoint,
                                           monkeypatch):
    _never_runs(monkeypatch)
    out = tmp_path / 'preds.pkl'
    out.write_bytes(b'earlier predictions')
    with pytest.raises(SystemExit, match=r'^error: .*preds\.pkl.* exists'):
        test_tool.main([SEG_TINY, seg_checkpoint, '--work-dir',
                        str(tmp_path / 'w'), '--out', str(out)])
    assert out.read_bytes() == b'earlier predictions'


def test_metrics_are_written_when_the_predictions_cannot_be(
        tmp_path, seg_checkpoint, monkeypatch):
    """A dump that fails (here: a full disk) lost the finished test: no
    metrics printed, no test_metrics.json."""
    real_dump = pickle.dump

    def full_disk(obj, file, *args, **kwargs):
        if isinstance(obj, list):  # the predictions
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real_dump(obj, file, *args, **kwargs)
    monkeypatch.setattr(pickle, 'dump', full_disk)
    work, out = tmp_path / 'w', tmp_path / 'preds.pkl'
    with pytest.raises(SystemExit) as exit_info:
        test_tool.main([SEG_TINY, seg_checkpoint, '--work-dir', str(work),
                        '--out', str(out), '--cfg-options',
                        'experiment_name=seg_tiny_full_disk'])
    message = str(exit_info.value.code)
    assert message.startswith('error: ') and 'No space left' in message
    assert str(out) in message and 'test_metrics.json' in message
    with open(work / 'test_metrics.json') as f:
        assert 'mIoU' in json.load(f)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ['w']  # no temporaries


# -- item 4: an FSDP config without a launcher is tested in this process --

WORKFLOW_DIR = osp.join(TESTS_DIR, 'configs', 'workflow')
PLAIN_CFG = osp.join(WORKFLOW_DIR, 'tiny_seg_layer_decay.py')
STRATEGY = osp.join(REPO_DIR, 'configs', '_base_', 'strategies',
                    'fsdp_bf16.py')


def test_fsdp_config_without_a_launcher_tests_in_one_process(
        tmp_path, monkeypatch, capsys):
    """docs/large_models.md: test.py accepts the FSDP config. Without a
    launcher it built the model and died with "Default process group has
    not been initialized". Now the plain runner tests it, loading the
    checkpoint through the same strict hook: the plain config's metrics."""
    from sapiens2_mm.registry import MODELS
    monkeypatch.setenv('SAPIENS2_WORKFLOW_DATA',
                       make_data(str(tmp_path / 'data')))
    leaf = tmp_path / 'fsdp_bf16_leaf.py'  # the shipped snippet, as is
    leaf.write_text(f'_base_ = [{PLAIN_CFG!r}, {STRATEGY!r}]\n')
    torch.manual_seed(0)
    ckpt = str(tmp_path / 'random.pth')
    model = MODELS.build(Config.fromfile(PLAIN_CFG).model)
    torch.save({'state_dict': model.state_dict()}, ckpt)
    fsdp = test_tool.main([str(leaf), ckpt, '--work-dir',
                           str(tmp_path / 'f'), '--cfg-options',
                           'experiment_name=fsdp_one_process'])
    log = capsys.readouterr()
    assert 'tools/dist_test.sh' in log.out + log.err
    plain = test_tool.main([PLAIN_CFG, ckpt, '--work-dir',
                            str(tmp_path / 'p'), '--cfg-options',
                            'experiment_name=plain_one_process'])
    assert fsdp == plain and 'mIoU' in plain


# -- meh: user errors of test.py as one line, Ctrl-C without a traceback --

def test_config_errors_and_a_photo_as_checkpoint_are_one_line(
        tmp_path, seg_checkpoint):
    bad = tmp_path / 'bad.py'
    bad.write_text("model = dict(type='EncoderDecoder'\n")
    with pytest.raises(SystemExit, match=r'^error: .*bad\.py.* not valid '
                       r'Python: .* at line 1'):
        test_tool.main([str(bad), seg_checkpoint])
    typo = tmp_path / 'typo.py'
    typo.write_text(f'_base_ = [{SEG_TINY!r}]\n'
                    "model = dict(backbone=dict(type='Sapiens2Bakbone'))\n")
    with pytest.raises(SystemExit,
                       match=r'^error: Unknown type Sapiens2Bakbone'):
        test_tool.main([str(typo), seg_checkpoint, '--work-dir',
                        str(tmp_path / 'w'), '--cfg-options',
                        'experiment_name=seg_tiny_typo'])
    photo = tmp_path / 'model.pth'
    photo.write_bytes(b'\xff\xd8\xff\xe0' + bytes(64))  # a JPEG's start
    with pytest.raises(SystemExit) as exit_info:
        test_tool.main([SEG_TINY, str(photo), '--work-dir',
                        str(tmp_path / 'w2'), '--cfg-options',
                        'experiment_name=seg_tiny_jpeg'])
    message = str(exit_info.value.code)
    assert message.startswith('error: ') and 'a JPEG image' in message
    assert 'weights_only' not in message


def test_ctrl_c_in_test_exits_130_without_a_traceback(
        tmp_path, seg_checkpoint, monkeypatch, capsys):
    from sapiens2_mm.engine import runners

    class Interrupted:
        def test(self):
            raise KeyboardInterrupt
    monkeypatch.setattr(runners, 'build_runner', lambda cfg: Interrupted())
    with pytest.raises(SystemExit) as exit_info:
        test_tool.main([SEG_TINY, seg_checkpoint, '--work-dir',
                        str(tmp_path / 'w')])
    assert exit_info.value.code == 130
    err = capsys.readouterr().err
    assert 'Test interrupted' in err and 'nothing was written' in err
    assert not (tmp_path / 'w' / 'test_metrics.json').exists()
