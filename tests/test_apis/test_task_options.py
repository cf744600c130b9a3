"""One options declaration per task: ``tools/infer.py TASK`` (its flags, help
and defaults), the keywords of ``run_inference`` and the defaults the task's
code uses all come from the task's ``options_class``."""
import inspect
from dataclasses import fields

import pytest

from sapiens2_mm.apis import get_task, run_inference, task_names
from sapiens2_mm.apis.tasks.options import TaskOptions, flag
from tests.test_tools.workflow_utils import load_tool

REQUIRED = ['c.py', '--input', 'x.jpg', '--output', 'out']


@pytest.fixture(scope='module')
def infer():
    return load_tool('infer')


def _common_dests(infer) -> set:
    """The dests every task's sub-command has (seg: no task option of
    another name)."""
    names = set(get_task('seg').options_class.names())
    return set(vars(infer.parse_args(['seg', *REQUIRED]))) - names


@pytest.mark.parametrize('task', task_names())
def test_cli_defaults_are_the_declared_defaults(infer, task):
    spec = get_task(task)
    parsed = vars(infer.parse_args([task, *REQUIRED]))
    declared = spec.options_class.defaults()
    own = {k: v for k, v in parsed.items() if k not in _common_dests(infer)}
    assert own == declared
    # the options made from the command line equal those made from Python
    assert spec.options(**own) == spec.options()


@pytest.mark.parametrize('task', task_names())
def test_cli_help_lists_every_option_with_its_help(infer, task, capsys):
    with pytest.raises(SystemExit):
        infer.parse_args([task, '-h'])
    text = ' '.join(capsys.readouterr().out.split())
    for f in fields(get_task(task).options_class):
        assert flag(f.name) in text
        if f.metadata['help']:
            assert ' '.join(f.metadata['help'].split()) in text, f.name


@pytest.mark.parametrize('task', task_names())
def test_every_option_is_a_run_inference_keyword(task, tmp_path):
    """``run_inference(..., <option>=<value>)`` takes each declared option
    and refuses other names before reading anything."""
    spec = get_task(task)
    for name, default in spec.options_class.defaults().items():
        assert getattr(spec.options(**{name: default}), name) == default
    with pytest.raises(ValueError, match=r"has no option\(s\) \['nope'\]"):
        run_inference(task, str(tmp_path / 'missing.py'), [],
                      str(tmp_path / 'out'), nope=1)


def test_run_inference_defaults_are_the_cli_defaults(infer):
    """The options every task shares: the keywords of run_inference have
    the command line's defaults."""
    parsed = vars(infer.parse_args(['seg', *REQUIRED]))
    params = inspect.signature(run_inference).parameters
    for dest in _common_dests(infer) - {'task', 'config', 'inputs',
                                        'output'}:
        assert params[dest].default == parsed[dest], dest


def test_values_are_checked_in_python_as_on_the_command_line(infer, capsys):
    with pytest.raises(ValueError, match=r"array_dtype \(--array-dtype\) "
                       r"must be one of 'float32', 'float16'; got 'float64'"):
        get_task('normal').options(array_dtype='float64')
    with pytest.raises(SystemExit):
        infer.parse_args(['normal', *REQUIRED, '--array-dtype', 'float64'])
    assert "invalid choice: 'float64'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r'ply_step \(--ply-step\) must be'):
        get_task('pointmap').options(ply_step=0)
    with pytest.raises(ValueError, match='--det-checkpoint needs'):
        get_task('pose').options(det_checkpoint='d.pth')


def test_a_task_without_options_has_none():
    assert TaskOptions.names() == () and TaskOptions().changed() == {}


def test_changed_lists_the_values_other_than_the_declared_defaults():
    options = get_task('pointmap').options(ply_step=2, background='photo')
    assert options.changed() == {'background': 'photo', 'ply_step': 2}
    assert get_task('normal').options_class.head_options() == ('normalize', )
