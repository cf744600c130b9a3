"""setup.py installs into an existing OpenMMLab environment without replacing it.

Exact pins in ``install_requires`` would make ``pip install -e .`` downgrade or
upgrade torch and put mmcv-lite beside a full mmcv; the exact, tested set
lives in requirements/runtime.txt instead.
"""
import runpy
from pathlib import Path

import pytest
import setuptools
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def setup_kwargs():
    """The keyword arguments setup.py passes to ``setuptools.setup``."""
    captured = {}
    patch = pytest.MonkeyPatch()
    patch.setattr(setuptools, 'setup', lambda **kw: captured.update(kw))
    patch.chdir(ROOT)
    try:
        runpy.run_path(str(ROOT / 'setup.py'), run_name='__main__')
    finally:
        patch.undo()
    return captured


def runtime_pins():
    pins = {}
    for line in (ROOT / 'requirements' / 'runtime.txt').read_text().splitlines():
        line = line.split('#')[0].strip()
        if line:
            req = Requirement(line)
            pins[req.name.lower()] = req
    return pins


def test_install_requires_has_no_exact_pins(setup_kwargs):
    requirements = [Requirement(r) for r in setup_kwargs['install_requires']]
    names = {r.name.lower() for r in requirements}
    assert {'torch', 'mmengine', 'mmpose', 'mmsegmentation'} <= names
    pinned = [str(r) for r in requirements
              if any(s.operator in ('==', '===') for s in r.specifier)]
    assert not pinned, f'exact pins in install_requires: {pinned}'
    # Neither mmcv distribution is required: either may already be installed.
    assert not names & {'mmcv', 'mmcv-lite', 'mmcv-full'}


def test_extras_offer_either_mmcv(setup_kwargs):
    extras = setup_kwargs['extras_require']
    assert Requirement(extras['mmcv-lite'][0]).name == 'mmcv-lite'
    assert Requirement(extras['mmcv'][0]).name == 'mmcv'


def test_runtime_txt_keeps_the_tested_pins_inside_the_ranges(setup_kwargs):
    pins = runtime_pins()
    for name in ('torch', 'mmcv-lite', 'mmengine', 'mmpose', 'mmsegmentation',
                 'mmpretrain'):
        assert [s.operator for s in pins[name].specifier] == ['=='], name
    ranges = [Requirement(r) for r in setup_kwargs['install_requires']]
    ranges += [Requirement(extra[0]) for extra in
               (setup_kwargs['extras_require']['mmcv-lite'], )]
    for req in ranges:
        pin = pins.get(req.name.lower())
        exact = [s for s in pin.specifier if s.operator == '=='] if pin else []
        if not exact:
            continue
        version = exact[0].version
        assert req.specifier.contains(version, prereleases=True), (
            f'requirements/runtime.txt pins {pin} outside setup.py range {req}')


def test_mmcv_range_matches_the_import_time_message(setup_kwargs):
    from sapiens2_mm.utils.mmcv_ext_fallback import MMCV_RANGE
    extra = Requirement(setup_kwargs['extras_require']['mmcv-lite'][0])
    assert str(extra.specifier) == str(Requirement('x' + MMCV_RANGE).specifier)


def test_license_file_matches_the_declared_license(setup_kwargs):
    assert setup_kwargs['license'] == 'Apache-2.0'
    text = (ROOT / 'LICENSE').read_text()
    assert 'Apache License' in text and 'Version 2.0, January 2004' in text
    assert 'END OF TERMS AND CONDITIONS' in text
