"""What the train and test policies share: the error type, the work dir,
FSDP detection and the checked checkpoint load hook.

The policies themselves: :mod:`~sapiens2_mm.apis.train_config`
(``tools/train.py``) and :mod:`~sapiens2_mm.apis.test_config`
(``tools/test.py``); their shared command line: :mod:`~sapiens2_mm.apis.
run_args`; the config is read by :func:`~sapiens2_mm.utils.config_file.
load_config`. Tests and notebooks call the same functions, so a run started
from Python gets the same config as one started from the shell.

>>> from sapiens2_mm.utils.config_file import load_config
>>> from sapiens2_mm.apis.train_config import prepare_train_config
>>> cfg = prepare_train_config(load_config('configs/seg/...py'), resume='auto')

User errors raise :class:`RunConfigError` with what was wrong and what to do.
"""
import os.path as osp
from typing import Optional

from mmengine.config import Config

from ..utils.output_paths import OutputPathError, check_writable_dir
from ..utils.sharded_checkpoint import is_sharded_checkpoint
from ..utils.user_errors import UserError
from .class_check import ClassMismatchError, check_config_classes

# Everything inserted into a config names its scope: the tools run configs of
# any scope (a stock mmpose config has default_scope='mmpose', where an
# unprefixed 'AtomicCheckpointHook' is not found).
SCOPE = 'sapiens2_mm.'
LOAD_HOOK = SCOPE + 'CheckedCheckpointLoadHook'


class RunConfigError(UserError, ValueError):
    """A config or option that cannot run, with what to do instead."""


def ensure_writable_dir(path: str, what: str = 'work dir') -> str:
    """Create ``path`` if needed and prove it is writable; return it."""
    try:
        return check_writable_dir(path, what, 'Use another --work-dir (or '
                                  '--show-dir / --out).')
    except OutputPathError as err:
        raise RunConfigError(str(err)) from err


def set_work_dir(cfg: Config, work_dir: Optional[str] = None) -> None:
    """``work_dir`` > the config's > ``./work_dirs/<config name>``, checked
    writable."""
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        name = osp.splitext(osp.basename(cfg.filename or 'config'))[0]
        cfg.work_dir = osp.join('./work_dirs', name)
    ensure_writable_dir(cfg.work_dir)


def is_fsdp(cfg: Config) -> bool:
    """Whether ``cfg`` runs with an FSDP strategy."""
    return 'FSDP' in str((cfg.get('strategy') or {}).get('type', ''))


def with_load_hook(cfg: Config, **hook_args) -> None:
    """Replace any CheckedCheckpointLoadHook of ``cfg`` by one with
    ``hook_args``."""
    hooks = [h for h in (cfg.get('custom_hooks') or [])
             if 'CheckedCheckpointLoadHook' not in str(h.get('type'))]
    cfg.custom_hooks = hooks + [dict(type=LOAD_HOOK, **hook_args)]


def check_classes(cfg: Config) -> None:
    """Refuse a config whose places disagree about the classes or
    keypoints (:func:`~sapiens2_mm.apis.class_check.check_config_classes`):
    it would train or test with swapped or shifted labels."""
    try:
        check_config_classes(cfg)
    except ClassMismatchError as err:
        raise RunConfigError(str(err)) from err


def refuse_sharded_folder(path: str, what: str) -> None:
    """A sharded checkpoint folder is read only by ``--resume`` of its FSDP
    run; for testing, inference or fine-tuning it is consolidated first."""
    if is_sharded_checkpoint(path):
        raise RunConfigError(
            f'{what} {path!r} is a sharded checkpoint (a folder of per-rank '
            'shards); consolidate it into one file first: python tools/'
            f'model_converters/consolidate_sharded_checkpoint.py {path} '
            'OUT.pth')
