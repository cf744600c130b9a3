"""Importing the OpenMMLab stack through sapiens2_mm works with transformers 5.

A fake ``transformers`` 5.0.0 on ``sys.path`` of a fresh interpreter reproduces
what mmpretrain 1.2 meets with the real one: every name imports (as a dummy)
except the helpers transformers 5 removed from ``modeling_utils``
(``apply_chunking_to_forward`` ...), so BLIP's guarded import fails, the bare
``except`` leaves ``PreTrainedModel`` None and ``class
BertPreTrainedModel(PreTrainedModel)`` raises ``TypeError: NoneType takes no
arguments`` (through mmseg -> mmdet.models -> mmpretrain.models).
"""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FAKE_TRANSFORMERS = r'''
import importlib
import importlib.abc
import importlib.machinery
import sys

__version__ = '{version}'
REMOVED = {'transformers.modeling_utils': {
    'apply_chunking_to_forward', 'find_pruneable_heads_and_indices',
    'prune_linear_layer'}}


class _AnyAttr(type):
    """Classes whose every class attribute is a do-nothing function."""

    def __getattr__(cls, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def _getattr_for(module_name):
    def __getattr__(name):
        if name.startswith('__') or name in REMOVED.get(module_name, ()):
            raise AttributeError(name)
        if name.islower():  # functions; decorators return what they wrap
            return lambda *args, **kwargs: (lambda wrapped: wrapped)
        bases = ()
        if name.startswith('AutoModel'):
            factory = importlib.import_module(
                'transformers.models.auto.auto_factory')
            bases = (factory._BaseAutoModelClass, )
        value = _AnyAttr(name, bases, {'__init__': lambda self, *a, **k: None})
        setattr(sys.modules[module_name], name, value)
        return value
    return __getattr__


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        parent, _, leaf = fullname.rpartition('.')
        if fullname.startswith('transformers.') and \
                leaf not in REMOVED.get(parent, ()):
            return importlib.machinery.ModuleSpec(fullname, self,
                                                  is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _getattr_for(module.__name__)


sys.meta_path.insert(0, _Submodules())
__getattr__ = _getattr_for('transformers')
'''


def fake_transformers(tmp_path, version):
    (tmp_path / 'transformers').mkdir()
    (tmp_path / 'transformers' / '__init__.py').write_text(
        FAKE_TRANSFORMERS.replace('{version}', version))
    info = tmp_path / f'transformers-{version}.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text(
        f'Metadata-Version: 2.1\nName: transformers\nVersion: {version}\n')
    return tmp_path


def run(code, path):
    return subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)], capture_output=True,
        text=True, cwd=ROOT,
        env={'PYTHONPATH': f'{path}:{ROOT}', 'PATH': '/usr/bin:/bin'})


def test_the_fake_reproduces_the_crash_without_the_guard(tmp_path):
    path = fake_transformers(tmp_path, '5.0.0')
    result = run('''
        import sys
        import sapiens2_mm  # the mmcv-lite fix, then the guard is taken out
        sys.meta_path[:] = [f for f in sys.meta_path
                            if type(f).__name__ != '_DisableMultimodal']
        import mmseg.models
    ''', path)
    assert result.returncode != 0
    assert 'NoneType takes no arguments' in result.stderr


def test_registry_and_upstream_models_import_with_transformers_5(tmp_path):
    path = fake_transformers(tmp_path, '5.0.0')
    result = run('''
        from sapiens2_mm.utils import register_all_modules
        register_all_modules()
        import mmdet.models, mmpose.models, mmseg.models  # noqa: F401
        from mmpretrain.registry import MODELS as PRETRAIN_MODELS
        from sapiens2_mm.registry import MODELS
        assert MODELS.get('Sapiens2') is not None
        try:  # the multimodal names are mmpretrain's placeholders
            PRETRAIN_MODELS.get('BlipCaption')()
        except ImportError as error:
            print('PLACEHOLDER', error)
    ''', path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'PLACEHOLDER' in result.stdout


def test_transformers_4_is_left_alone(tmp_path):
    path = fake_transformers(tmp_path, '4.40.0')
    result = run('''
        import sys
        import sapiens2_mm
        print(any(type(f).__name__ == '_DisableMultimodal'
                  for f in sys.meta_path))
    ''', path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == 'False'
