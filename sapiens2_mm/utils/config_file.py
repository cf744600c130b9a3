"""Read a config for any run: the one ``load_config`` of the package.

``init_model`` (inference), ``prepare_train_config`` / ``prepare_test_config``
(tools/train.py, tools/test.py) and the analysis tools read configs through
:func:`load_config`, with one contract: a path or a ``Config`` in, a config
of its own out (a ``Config`` given is copied, never changed), the
``--cfg-options`` merged and checked, errors typed and naming the file.
"""
import os
import os.path as osp
from pathlib import Path
from typing import List, Mapping, Optional, Union

from mmengine.config import Config

from .cfg_options import apply_cfg_options
from .user_errors import ConfigError, ConfigNotFoundError

ConfigType = Union[str, Path, Config]


def load_config(config: ConfigType, cfg_options: Optional[Mapping] = None,
                notes: Optional[List[str]] = None) -> Config:
    """Read ``config`` (a file, or a ``Config`` passed as a copy) and merge
    ``cfg_options`` (``--cfg-options``).

    Unknown keys and overrides of config variables are refused
    (:func:`~sapiens2_mm.utils.cfg_options.apply_cfg_options`); values
    changed beyond the named keys (a schedule following
    ``train_cfg.max_iters``) are appended to ``notes``.

    Raises:
        TypeError: ``config`` is neither a path nor a ``Config``.
        ConfigNotFoundError: no such file.
        ConfigError: the file (or one of its ``_base_`` files) is not valid
            Python.
        UnknownConfigKeyError: a ``cfg_options`` key the config lacks.
    """
    if isinstance(config, Config):
        cfg = config.copy()
    elif isinstance(config, (str, Path)):
        cfg = _read(os.fspath(config))
    else:
        raise TypeError(
            f'config must be a path or an mmengine Config, got '
            f'{type(config).__name__}.')
    changes = apply_cfg_options(cfg, cfg_options)
    if notes is not None:
        notes.extend(changes)
    return cfg


def _read(path: str) -> Config:
    if not osp.isfile(path):
        raise ConfigNotFoundError(
            f'Config file not found: {path!r}. Pass a file from configs/ '
            '(e.g. configs/pose/sapiens2-1b_8xb7-20k_sapiens308-1024x768.py).')
    try:
        return Config.fromfile(path)
    except SyntaxError as err:  # mmengine names neither file nor line
        raise ConfigError(
            f'Config file {path!r} (or one of its _base_ files) is not valid '
            f'Python: {err.msg} at line {err.lineno}.') from None
