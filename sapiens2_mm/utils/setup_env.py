"""Scope set-up for code that builds modules outside an mmengine Runner."""
import contextlib
import datetime
from typing import Iterator

from mmengine import DefaultScope

from ..registry import SCOPE
from .mmcv_ext_fallback import require_mmcv

ALL_MODULES = (
    'sapiens2_mm.models', 'sapiens2_mm.models.heads',
    'sapiens2_mm.models.losses', 'sapiens2_mm.models.estimators',
    'sapiens2_mm.codecs', 'sapiens2_mm.datasets', 'sapiens2_mm.evaluation',
    'sapiens2_mm.engine', 'sapiens2_mm.visualization', 'sapiens2_mm.apis',
    'sapiens2_mm.models.necks', 'sapiens2_mm.models.selfsup')


def register_all_modules(init_default_scope: bool = True) -> None:
    """Import every sapiens2_mm module so that it registers, and set the scope.

    Tests, demos and converters build models without a Runner; they call this
    once so that ``dict(type='Sapiens2')`` and ``dict(type='mmpose.X')`` resolve.

    Args:
        init_default_scope: make ``'sapiens2_mm'`` the current default scope. If
            another scope is current, a new instance is created under a unique
            name so the caller's scope is not overwritten.

    Raises:
        ImportError: no mmcv (full or lite) is installed; the message says
            which to install.
    """
    import importlib

    from .upstream_notices import silence_upstream_warnings
    require_mmcv()
    # build_loss / pkg_resources notices of the pinned stack, matched by
    # message and emitting module (upstream_notices.py); tools that build
    # models without a Runner (infer, export) print them otherwise
    silence_upstream_warnings()
    for name in ALL_MODULES:
        importlib.import_module(name)
    if not init_default_scope:
        return
    current = DefaultScope.get_current_instance()
    if current is None or not DefaultScope.check_instance_created(SCOPE):
        DefaultScope.get_instance(SCOPE, scope_name=SCOPE)
    elif current.scope_name != SCOPE:
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S%f')
        DefaultScope.get_instance(f'{SCOPE}-{stamp}', scope_name=SCOPE)


def config_scope(cfg) -> str:
    """The registry scope a config's unprefixed types belong to: its
    ``default_scope`` (``'mmpose'`` for a stock mmpose config), else
    ``'sapiens2_mm'``."""
    return cfg.get('default_scope') or SCOPE


@contextlib.contextmanager
def in_config_scope(cfg) -> Iterator[str]:
    """Build inside the block as the config's Runner would: with the
    config's ``default_scope`` current (so ``'TopdownPoseEstimator'`` of a
    stock mmpose config resolves), the previous scope restored after.

    Yields:
        The scope name.
    """
    register_all_modules(init_default_scope=False)
    scope = config_scope(cfg)
    with DefaultScope.overwrite_default_scope(scope):
        yield scope


def qualified_type(cfg, type_name) -> str:
    """``type_name`` as this package's configs spell it: own types
    unprefixed, upstream types with their scope. ``'EncoderDecoder'`` of an
    mmseg-scope config is ``'mmseg.EncoderDecoder'``, ``'sapiens2_mm.SegHead'``
    is ``'SegHead'``; a class gives its name."""
    if not isinstance(type_name, str):
        return getattr(type_name, '__name__', str(type_name))
    if type_name.startswith(SCOPE + '.'):
        return type_name[len(SCOPE) + 1:]
    if '.' in type_name:
        return type_name
    scope = config_scope(cfg)
    return type_name if scope == SCOPE else f'{scope}.{type_name}'
