"""The tools end on a user error with one ``error:`` line, by its type: the
three main tools map :class:`UserError` (and ``OSError``) and read no
message text; anything else keeps its traceback."""
import pytest

from sapiens2_mm.apis.run_config import RunConfigError
from sapiens2_mm.utils import CheckpointMismatchError
from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError
from sapiens2_mm.utils.cli_errors import (
    UnknownTypeError,
    unknown_types_as_config_errors,
    user_errors_as_exit,
)
from sapiens2_mm.utils.train_lock import WorkDirLockedError
from sapiens2_mm.utils.user_errors import (
    CheckpointError,
    ConfigNotFoundError,
    InputNotAFolderError,
    OutputExistsError,
    UserError,
)
from tests.test_apis.tiny_configs import tiny_config
from tests.test_tools.workflow_utils import load_tool


class _Odd(UserError):
    """A user error whose message names nothing any tool knows."""


@pytest.mark.parametrize('error_type', [
    RunConfigError, UnknownConfigKeyError, WorkDirLockedError,
    CheckpointMismatchError, CheckpointError, ConfigNotFoundError,
    InputNotAFolderError, OutputExistsError, UnknownTypeError, _Odd])
def test_every_user_error_type_is_one_line(error_type):
    with pytest.raises(SystemExit) as exit_info:
        with user_errors_as_exit():
            raise error_type('what was wrong; what to do')
    assert exit_info.value.code == 'error: what was wrong; what to do'


def test_user_errors_keep_their_builtin_type():
    """Python callers catching the built-in type keep working."""
    assert issubclass(ConfigNotFoundError, FileNotFoundError)
    assert issubclass(InputNotAFolderError, NotADirectoryError)
    assert issubclass(OutputExistsError, FileExistsError)
    assert issubclass(CheckpointError, ValueError)
    assert str(UnknownConfigKeyError('no quotes')) == 'no quotes'


def test_other_errors_keep_their_traceback():
    with pytest.raises(ValueError, match='Could not read checkpoint'):
        with user_errors_as_exit():
            raise ValueError('Could not read checkpoint x.pth')


def test_unknown_registry_type_becomes_a_config_error():
    from sapiens2_mm.registry import MODELS
    with pytest.raises(UnknownTypeError, match=r'Unknown type NoSuchHead: '
                       r'.*registry.*\(my_config\.py\)'):
        with unknown_types_as_config_errors('my_config.py'):
            MODELS.build(dict(type='NoSuchHead'))
    with pytest.raises(KeyError, match='other'):  # a programming error
        with unknown_types_as_config_errors('my_config.py'):
            raise KeyError('other')


@pytest.mark.parametrize('tool', ['train', 'test'])
def test_train_and_test_map_types_not_message_text(tool, monkeypatch,
                                                   tmp_path):
    """A ValueError whose text the tools once matched while running
    ('Could not read checkpoint', the checkpoint's path) keeps its traceback
    unless its type says it is the user's; a UserError with any text is one
    line."""
    import sapiens2_mm.engine.runners as runners
    module = load_tool(tool)
    ckpt = tmp_path / 'ckpt.pth'
    ckpt.write_bytes(b'')
    args = [tiny_config('seg')] + ([str(ckpt)] if tool == 'test' else []) \
        + ['--work-dir', str(tmp_path / 'work')]

    def raising(error):
        def build_runner(*_, **__):
            raise error
        return build_runner

    monkeypatch.setattr(runners, 'build_runner', raising(
        ValueError(f'Could not read checkpoint {ckpt}')))
    with pytest.raises(ValueError, match='Could not read checkpoint'):
        module.main(args)
    monkeypatch.setattr(runners, 'build_runner', raising(_Odd('odd text')))
    with pytest.raises(SystemExit) as exit_info:
        module.main(args)
    assert exit_info.value.code == 'error: odd text'


def test_infer_maps_types_not_message_text(monkeypatch, tmp_path):
    infer = load_tool('infer')
    argv = ['seg', tiny_config('seg'), '--input', 'x.jpg', '--output',
            str(tmp_path / 'out')]

    def raising(error):
        def run(**_):
            raise error
        return run

    monkeypatch.setattr(infer, 'run_inference', raising(_Odd('odd text')))
    with pytest.raises(SystemExit) as exit_info:
        infer.cli(argv)
    assert exit_info.value.code == 'error: odd text'
    monkeypatch.setattr(infer, 'run_inference', raising(
        ValueError('--batch-size must be >= 1')))
    with pytest.raises(ValueError):
        infer.cli(argv)
