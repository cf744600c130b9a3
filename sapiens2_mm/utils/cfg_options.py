"""Refuse ``--cfg-options`` keys that a config does not have.

mmengine's ``Config.merge_from_dict`` silently adds any key it is given, so a
typo such as ``model.backbone.with_cpp=True`` trains without activation
checkpointing and nobody notices. A key is accepted here when

* it already exists in the config (list entries by index: ``a.0.b``), or
* its parent dict has a ``type`` whose class (or a base class reached through
  ``**kwargs``) takes an argument of that name, e.g. ``model.backbone.with_cp``
  for ``type='Sapiens2'`` even when the config leaves it at its default, or
* it is a known argument of a type-less runner section (``train_dataloader``
  keys of ``torch.utils.data.DataLoader``, top-level Runner arguments, ...), or
* its parent exists and is ``None`` (filling an optional sub-config).
"""
import difflib
import inspect
from typing import Dict, List, Mapping, Optional, Sequence, Set

from mmengine.config import Config

# Runner/FlexibleRunner arguments read from the top level of a config.
RUNNER_KEYS = {
    'model', 'work_dir', 'train_dataloader', 'val_dataloader',
    'test_dataloader', 'train_cfg', 'val_cfg', 'test_cfg', 'auto_scale_lr',
    'optim_wrapper', 'param_scheduler', 'val_evaluator', 'test_evaluator',
    'default_hooks', 'custom_hooks', 'data_preprocessor', 'load_from',
    'resume', 'launcher', 'env_cfg', 'log_processor', 'log_level',
    'visualizer', 'default_scope', 'randomness', 'experiment_name',
    'strategy', 'compile', 'runner_type', 'custom_imports',
    'model_wrapper_cfg', 'find_unused_parameters'
}
DATALOADER_KEYS = {
    'batch_size', 'num_workers', 'persistent_workers', 'pin_memory',
    'drop_last', 'shuffle', 'sampler', 'batch_sampler', 'collate_fn',
    'dataset', 'timeout', 'prefetch_factor', 'worker_init_fn',
    'generator', 'multiprocessing_context', 'pin_memory_device'
}
# Type-less sections whose keys mmengine reads itself.
SECTION_KEYS = {
    'train_cfg': {'type', 'by_epoch', 'max_iters', 'max_epochs',
                  'val_interval', 'val_begin', 'dynamic_intervals'},
    'val_cfg': {'type', 'fp16'},
    'test_cfg': {'type', 'fp16'},
    'env_cfg': {'cudnn_benchmark', 'mp_cfg', 'dist_cfg', 'resource_limit'},
    'randomness': {'seed', 'diff_rank_seed', 'deterministic'},
    'auto_scale_lr': {'enable', 'base_batch_size'},
}


class UnknownConfigKeyError(KeyError):
    """``--cfg-options`` named keys that the config and its types lack."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _registries():
    from ..registry import ALL_REGISTRIES
    return ALL_REGISTRIES


def _accepted_args(type_value) -> Optional[Set[str]]:
    """Constructor argument names of a config ``type``; None means any."""
    classes = []
    if inspect.isclass(type_value):
        classes = [type_value]
    elif isinstance(type_value, str):
        for registry in _registries():
            try:
                found = registry.get(type_value)
            except Exception:  # noqa: BLE001 - unknown scope: try the next
                found = None
            if found is not None and found not in classes:
                classes.append(found)
    if not classes:
        return None
    names: Set[str] = {'type'}
    for cls in classes:
        if not inspect.isclass(cls):  # a registered function
            params = inspect.signature(cls).parameters.values()
            names.update(p.name for p in params)
            if any(p.kind is p.VAR_KEYWORD for p in params):
                return None
            continue
        for klass in cls.__mro__:
            init = klass.__dict__.get('__init__')
            if init is None:
                continue
            if klass is object:
                return None  # reached object with **kwargs still open
            params = list(inspect.signature(init).parameters.values())[1:]
            names.update(p.name for p in params
                         if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
        else:
            return None
    return names


def _allowed_new_keys(path: Sequence[str], parent) -> Optional[Set[str]]:
    """Keys that may be added to ``parent`` (found at ``path``); None: any."""
    if not path:
        return RUNNER_KEYS
    if isinstance(parent, Mapping) and 'type' in parent:
        return _accepted_args(parent['type'])
    if len(path) == 1 and path[0].endswith('_dataloader'):
        return DATALOADER_KEYS
    if len(path) == 1 and path[0] in SECTION_KEYS:
        return SECTION_KEYS[path[0]]
    return set()


def _problem(key: str, cfg: Mapping) -> Optional[str]:
    """Why ``key`` (dotted) does not fit ``cfg``; None when it does."""
    parts = key.split('.')
    node = cfg
    for depth, part in enumerate(parts):
        here = '.'.join(parts[:depth]) or '<top level>'
        if node is None:
            return None  # optional sub-config being filled in
        if isinstance(node, (list, tuple)):
            if not part.isdigit() or int(part) >= len(node):
                return (f'{here} is a list of {len(node)} entries; use an '
                        f'index 0..{len(node) - 1} instead of {part!r}')
            node = node[int(part)]
            continue
        if not isinstance(node, Mapping):
            return (f'{here} is a {type(node).__name__} ({node!r}), not a '
                    f'dict, so it has no key {part!r}')
        if part in node:
            node = node[part]
            continue
        allowed = _allowed_new_keys(parts[:depth], node)
        if allowed is None or (depth == len(parts) - 1 and part in allowed):
            return None
        candidates = sorted(set(map(str, node)) | (allowed or set()))
        close = difflib.get_close_matches(part, candidates, n=3, cutoff=0.6)
        hint = (f' Did you mean {", ".join(repr(c) for c in close)}?'
                if close else '')
        where = f'{here} (type {node["type"]!r})' if 'type' in node else here
        return (f'{where} has no key {part!r}.{hint} Existing keys: '
                f'{", ".join(sorted(map(str, node)))}')
    return None


def find_unknown_cfg_options(cfg: Config, options: Mapping) -> Dict[str, str]:
    """Map each unknown ``--cfg-options`` key to the reason; empty if all fit."""
    plain = cfg.to_dict() if isinstance(cfg, Config) else cfg
    problems = {}
    for key in options:
        reason = _problem(str(key), plain)
        if reason is not None:
            problems[str(key)] = reason
    return problems


def check_cfg_options(cfg: Config, options: Optional[Mapping]) -> None:
    """Raise :class:`UnknownConfigKeyError` if any option key is unknown.

    Args:
        cfg: the loaded config, before merging the options.
        options: ``{dotted.key: value}`` as parsed by mmengine's DictAction.
    """
    if not options:
        return
    problems = find_unknown_cfg_options(cfg, options)
    if problems:
        lines: List[str] = [f'  {k}: {v}' for k, v in problems.items()]
        raise UnknownConfigKeyError(
            f'--cfg-options has {len(problems)} key(s) that config '
            f'{getattr(cfg, "filename", "<config>")} does not have and mmengine '
            'would silently add:\n' + '\n'.join(lines) +
            '\nFix the spelling, or check the config with '
            'tools/analysis_tools/print_config.py.')
