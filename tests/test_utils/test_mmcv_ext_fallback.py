"""The mmcv._ext stand-in is installed only where mmcv ships without it.

Each case runs in a fresh interpreter with a fake ``mmcv`` package first on
``sys.path``: one without ``_ext`` (as mmcv-lite), one whose ``_ext`` exists
but fails to load (a full mmcv built for another torch), and one with no mmcv.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent('''
    import logging, sys, warnings
    logging.basicConfig(level=logging.INFO, format='LOG %(message)s')
    warnings.simplefilter('always')
    import sapiens2_mm
    from sapiens2_mm.utils import install_mmcv_ext_fallback
    install_mmcv_ext_fallback()  # a second call reports nothing again
    ext = sys.modules.get('mmcv._ext')
    print('EXT', type(ext).__name__ if ext is not None else None)
''')


def run_with_fake_mmcv(tmp_path, ext_source=None, code=PROBE):
    package = tmp_path / 'mmcv'
    package.mkdir()
    (package / '__init__.py').write_text('__version__ = "2.1.0"\n')
    if ext_source is not None:
        (package / '_ext.py').write_text(ext_source)
    env_path = f'{tmp_path}:{ROOT}'
    return subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        env={'PYTHONPATH': env_path, 'PATH': '/usr/bin:/bin'}, cwd=tmp_path)


def test_stand_in_replaces_an_absent_extension_and_logs_once(tmp_path):
    result = run_with_fake_mmcv(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'EXT _ExtStandIn' in result.stdout
    assert result.stderr.count('mmcv has no compiled mmcv._ext') == 1


def test_broken_compiled_extension_is_reported_not_replaced(tmp_path):
    broken = ('raise ImportError("libc10_cuda.so: undefined symbol: '
              '_ZN3c1017RegisterOperators")\n')
    result = run_with_fake_mmcv(tmp_path, broken)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'EXT None' in result.stdout
    assert result.stderr.count('fails to import its compiled extension') == 1
    assert 'undefined symbol: _ZN3c1017RegisterOperators' in result.stderr
    assert 'mmcv-lite does not include' not in result.stderr


def test_working_compiled_extension_is_left_alone(tmp_path):
    result = run_with_fake_mmcv(tmp_path, 'def nms(*args):\n    return "real"\n')
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'EXT module' in result.stdout
    assert 'mmcv' not in result.stderr


def test_missing_mmcv_gives_an_install_message(tmp_path):
    code = textwrap.dedent('''
        import sys
        sys.modules['mmcv'] = None  # as if no mmcv distribution is installed
        import sapiens2_mm  # the backbone-only path still imports
        from sapiens2_mm.utils import register_all_modules
        try:
            register_all_modules()
        except ImportError as error:
            print('ERROR', error)
    ''')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'ERROR sapiens2_mm needs mmcv>=2.0.0,<2.2.0' in result.stdout
    assert 'mmcv-lite==2.1.0' in result.stdout
