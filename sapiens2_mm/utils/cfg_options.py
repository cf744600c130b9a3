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

A class whose ``**kwargs`` only forward to a fixed signature counts as taking
what that signature takes: mmengine's ``CheckpointHook`` passes them to
``Runner.save_checkpoint``, which takes none beyond those the hook sets, so
``default_hooks.checkpoint.intervall=1`` is refused here instead of crashing
the first save.

Python configs bind variables when they are read: ``train_pipeline`` is copied
into ``train_dataloader.dataset.pipeline`` and ``max_iters`` into
``train_cfg.max_iters`` and the scheduler ``end``, and the runner reads the
copies. :func:`apply_cfg_options` therefore refuses an override of a config
variable, naming the keys that hold its value, so that the user overrides
those keys explicitly (nothing is rewritten behind the named keys). One
documented exception: a new ``train_cfg.max_iters`` / ``max_epochs`` moves the
scheduler boundaries (and the validation / checkpoint interval) bound to the
old length, and says so in one note (:func:`rescale_schedule`).
"""
import difflib
import inspect
from typing import (
    Any,
    Collection,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
)

from mmengine.config import Config, DictAction

from .user_errors import UserError

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
# Top-level keys that sapiens2_mm's tools read themselves.
TOOL_KEYS = {'tta_model', 'tta_pipeline', 'load_partial'}
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


class CfgOptionsAction(DictAction):
    """mmengine's ``DictAction`` (``--cfg-options KEY=VALUE ...``), with a
    usage error naming the item that lacks ``=`` (mmengine's own says "not
    enough values to unpack (expected 2, got 1)")."""

    def __call__(self, parser, namespace, values, option_string=None):
        for item in values if isinstance(values, list) else [values]:
            if '=' not in item:
                parser.error(
                    f'{option_string} {item!r}: expected KEY=VALUE, e.g. '
                    f'{item}=VALUE (model.backbone.with_cp=True).')
        super().__call__(parser, namespace, values, option_string)


class UnknownConfigKeyError(UserError, KeyError):
    """``--cfg-options`` named keys that the config and its types lack."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _registered(type_value) -> list:
    """The classes (or functions) a config ``type`` names, in any
    registry."""
    from ..registry import ALL_REGISTRIES
    if inspect.isclass(type_value):
        return [type_value]
    classes = []
    if isinstance(type_value, str):
        for registry in ALL_REGISTRIES:
            try:
                found = registry.get(type_value)
            except Exception:  # noqa: BLE001 - unknown scope: try the next
                found = None
            if found is not None and found not in classes:
                classes.append(found)
    return classes


def _argument_default(type_value, name: str) -> Any:
    """The default of constructor argument ``name`` of a config ``type``
    (the first class along the MRO that names it), or None."""
    for cls in _registered(type_value):
        for klass in (cls.__mro__ if inspect.isclass(cls) else [cls]):
            init = klass.__dict__.get('__init__') if inspect.isclass(
                klass) else klass
            if init is None:
                continue
            param = inspect.signature(init).parameters.get(name)
            if param is not None:
                default = param.default
                return None if default is param.empty else default
    return None


def _accepted_args(type_value) -> Optional[Set[str]]:
    """Constructor argument names of a config ``type``; None means any."""
    from mmengine.hooks import CheckpointHook
    classes = _registered(type_value)
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
            # CheckpointHook's **kwargs only feed Runner.save_checkpoint,
            # which takes none beyond those the hook sets
            if (not any(p.kind is p.VAR_KEYWORD for p in params)
                    or klass is CheckpointHook):
                break
        else:
            return None
    return names


def _allowed_new_keys(path: Sequence[str], parent) -> Optional[Set[str]]:
    """Keys that may be added to ``parent`` (found at ``path``); None: any."""
    if not path:
        return RUNNER_KEYS | TOOL_KEYS
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
        if part in allowed and 'type' in node:
            # an argument the config leaves at its default: a deeper key
            # (data_prefix.normal_path) starts from that default when it is
            # a dict or None (_fill_absent_parents)
            default = _argument_default(node['type'], part)
            if default is None:
                return None
            if isinstance(default, Mapping):
                sub = parts[depth + 1]
                if sub in default or depth + 2 < len(parts):
                    return None
                close = difflib.get_close_matches(sub, list(map(str, default)),
                                                  n=3, cutoff=0.6)
                hint = (f' Did you mean {", ".join(map(repr, close))}?'
                        if close else '')
                return (f'{here}.{part} (the default of {node["type"]!r}: '
                        f'{dict(default)}) has no key {sub!r}.{hint}')
            return (f'{here}.{part} is an argument of {node["type"]!r} left '
                    f'at its default {default!r}, which is not a dict: set '
                    f'{here}.{part}=VALUE instead of {key}')
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


def _paths_equal_to(node: Any, value: Any, path: tuple = ()) -> List[tuple]:
    """Paths under ``node`` whose value equals ``value`` (not descending into
    a match)."""
    if path and node == value:
        return [path]
    found = []
    if isinstance(node, Mapping):
        for key, child in node.items():
            found += _paths_equal_to(child, value, path + (key, ))
    elif isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            found += _paths_equal_to(child, value, path + (i, ))
    return found


def _dotted(path: Sequence) -> str:
    return '.'.join(map(str, path))


def _paths_derived_from(node: Any, prefix: str, path: tuple = ()
                        ) -> List[tuple]:
    """Paths under ``node`` of strings that extend ``prefix`` (a file name
    built from a folder variable: ``data_root + 'annotations/val.json'``)."""
    if isinstance(node, str):
        return [path] if node != prefix and node.startswith(prefix) else []
    found = []
    if isinstance(node, Mapping):
        for key, child in node.items():
            found += _paths_derived_from(child, prefix, path + (key, ))
    elif isinstance(node, (list, tuple)):
        for i, child in enumerate(node):
            found += _paths_derived_from(child, prefix, path + (i, ))
    return found


def _variable_problems(plain: Mapping, options: Mapping) -> Dict[str, str]:
    """Overrides of config variables, which the runner never reads: each
    mapped to a message naming the keys that hold the variable's value.

    Only keys the runner or the tools read are named (a copy inside another
    config variable would be refused too); a folder variable also names the
    file keys built from it (``val_evaluator.ann_file`` from ``data_root``).
    """
    read = {k: v for k, v in plain.items()
            if k in RUNNER_KEYS or k in TOOL_KEYS}
    problems = {}
    for key in options:
        top, *rest = str(key).split('.')
        if top in RUNNER_KEYS or top in TOOL_KEYS or top not in plain:
            continue
        old = plain[top]
        copies = [_dotted(p) for p in _paths_equal_to(read, old)]
        derived = ([_dotted(p) for p in _paths_derived_from(read, old)]
                   if isinstance(old, str) and old and not rest else [])
        if not copies and not derived:
            problems[str(key)] = (
                f'{top} is a config variable that no key the runner reads '
                'equals any more (it was merged into other values, e.g. '
                'dict(**var, ...), when the config was read), so overriding '
                'it changes nothing. Override the keys that use it.')
            continue
        hint = (f'train_cfg.{top} (the scheduler ends follow)'
                if top in ('max_iters', 'max_epochs') else None)
        keys = ['.'.join([c, *rest]) for c in copies]
        shown = ', '.join(keys[:8]) + (', ...' if len(keys) > 8 else '')
        holding = f'; keys holding its value: {shown}' if keys else ''
        built = (f'; keys built from it: {", ".join(derived[:8])}' +
                 (', ...' if len(derived) > 8 else '')) if derived else ''
        problems[str(key)] = (
            f'{top} is a config variable: its value was copied where it is '
            'used when the config was read, so overriding it changes '
            'nothing the runner reads. Set '
            f'{hint or "the keys that use it"} instead{holding}{built}.')
    return problems


def _scheduler_list(cfg: Config) -> List[tuple]:
    """(path, scheduler dict) of every ``param_scheduler`` entry."""
    sched = cfg.get('param_scheduler')
    if isinstance(sched, Mapping) and 'type' not in sched:  # per optimizer
        return [((('param_scheduler', name, i)), s)
                for name, group in sched.items()
                for i, s in enumerate(group or [])]
    if isinstance(sched, Mapping):
        return [(('param_scheduler', ), sched)]
    return [(('param_scheduler', i), s) for i, s in enumerate(sched or [])]


def _scaled(point: int, old: int, new: int) -> int:
    """``point`` of a schedule of length ``old`` on one of length ``new``:
    0 stays 0, every later boundary lands in ``1..new`` (so a warmup end and
    the next scheduler's begin still coincide)."""
    if point <= 0:
        return point
    return min(new, max(1, int(round(point * new / old))))


def rescale_schedule(cfg: Config, key: str, old: int, new: int,
                     keep: Collection[str] = ()) -> List[str]:
    """Move scheduler boundaries bound to the old training length.

    ``end`` values at or past ``old`` become ``new``. When ``new`` is shorter
    than an inner boundary (a warmup ``end``, a ``begin``, a milestone), every
    boundary is scaled by ``new / old`` instead, keeping each ``begin < end``.

    Args:
        cfg: config with the new ``train_cfg`` already merged.
        key: ``'max_iters'`` (schedulers with ``by_epoch=False``) or
            ``'max_epochs'`` (``by_epoch=True``).
        old: length the config was written for; new: the override.
        keep: dotted keys left as they are (set by the user explicitly).

    Returns:
        One ``'<key> <old> -> <new>'`` entry per changed value.
    """
    if old == new or old <= 0:
        return []
    by_epoch = key == 'max_epochs'
    entries = [(p, s) for p, s in _scheduler_list(cfg)
               if isinstance(s, Mapping) and
               bool(s.get('by_epoch', True)) == by_epoch]

    def inner(s):
        points = [s.get('begin', 0)] + list(s.get('milestones', []))
        end = s.get('end')
        if isinstance(end, int) and end < old:
            points.append(end)
        return points

    scale = new < old and any(b >= new for _, s in entries for b in inner(s))
    notes = []
    for path, s in entries:
        changed = {}
        end = s.get('end')
        if scale:
            begin = _scaled(s.get('begin', 0), old, new)
            if begin != s.get('begin', 0):
                changed['begin'] = begin
            if isinstance(end, int) and end <= old:
                changed['end'] = max(begin + 1, _scaled(end, old, new))
            if s.get('milestones'):
                changed['milestones'] = sorted(
                    {_scaled(m, old, new) for m in s['milestones']})
        elif isinstance(end, int) and end >= old:
            changed['end'] = new
        for name, value in changed.items():
            if f'{_dotted(path)}.{name}' in keep:
                continue
            notes.append(f'{_dotted(path)}.{name} {s.get(name)} -> {value}')
            s[name] = value
    return notes


def _follow_length(cfg: Config, before: Mapping, options: Mapping) -> list:
    """Rescale the schedule for a new ``train_cfg.max_iters``/``max_epochs``;
    one note per length naming every value changed."""
    notes = []
    for key in ('max_iters', 'max_epochs'):
        option = f'train_cfg.{key}'
        old = (before.get('train_cfg') or {}).get(key)
        if option not in options or not isinstance(old, int):
            continue
        new = cfg.train_cfg[key]
        changes = rescale_schedule(cfg, key, old, new, keep=options)
        bound = {'train_cfg.val_interval': cfg.train_cfg,
                 'default_hooks.checkpoint.interval':
                 (cfg.get('default_hooks') or {}).get('checkpoint')}
        for dotted, node in bound.items():
            name = dotted.rsplit('.', 1)[1]
            if (isinstance(node, Mapping) and node.get(name) == old
                    and dotted not in options and new != old):
                node[name] = new
                changes.append(f'{dotted} {old} -> {new}')
        if changes:
            notes.append(f'--cfg-options {option}={new} (was {old}) rescaled '
                         f'the schedule: {", ".join(changes)} (see '
                         'docs/train_test.md).')
    return notes


def _fill_none_parents(cfg: Config, options: Mapping) -> List[str]:
    """Turn ``None`` sub-configs that an option writes into into dicts.

    mmengine's ``merge_from_dict`` refuses ``a.b.c=v`` when ``a.b`` is
    ``None`` (a TypeError about inheriting from base). ``init_cfg`` is the
    common case: the tiny configs set ``model.backbone.init_cfg=None``, and
    the documented fine-tuning override is
    ``model.backbone.init_cfg.checkpoint=FILE``; an ``init_cfg`` filled that
    way without a ``type`` option becomes ``dict(type='Pretrained')``.
    """
    notes = []
    for key in options:
        parts = str(key).split('.')
        node = cfg
        for depth, part in enumerate(parts[:-1]):
            if not isinstance(node, (Mapping, Config)) or part not in node:
                break
            if node[part] is None:
                path = '.'.join(parts[:depth + 1])
                filled = {}
                if part == 'init_cfg' and f'{path}.type' not in options:
                    filled = dict(type='Pretrained')
                node[part] = filled
                notes.append(f'--cfg-options {key}: {path} was None; it '
                             f'starts from {filled} instead.')
            node = node[part]
    return notes


def _fill_absent_parents(cfg: Config, options: Mapping) -> List[str]:
    """Add the absent argument an option writes into, starting from the
    class default: ``train_dataloader.dataset.data_prefix.normal_path=X`` on
    a dataset config without ``data_prefix`` keeps the class's other
    prefixes (mmengine's merge would create ``data_prefix`` holding only
    ``normal_path``)."""
    import copy
    notes = []
    for key in options:
        parts = str(key).split('.')
        node = cfg
        for depth, part in enumerate(parts[:-1]):
            if not isinstance(node, (Mapping, Config)):
                break
            if part not in node:
                if 'type' not in node:
                    break
                default = _argument_default(node['type'], part)
                node[part] = copy.deepcopy(dict(default or {}))
                notes.append(
                    f'--cfg-options {key}: {".".join(parts[:depth + 1])} was '
                    f'not set; it starts from the default of '
                    f'{node["type"]!r}: {node[part]}.')
            node = node[part]
    return notes


def _lines(problems: Mapping[str, str]) -> str:
    return '\n'.join(f'  {k}: {v}' for k, v in problems.items())


def apply_cfg_options(cfg: Config, options: Optional[Mapping]) -> List[str]:
    """Check ``options`` and merge them.

    Args:
        cfg: the loaded config (changed in place).
        options: ``{dotted.key: value}`` as parsed by mmengine's DictAction.

    Returns:
        Notes on every value changed beyond the named keys: a ``None``
        sub-config filled in, and one line for a schedule rescaled to a new
        ``train_cfg.max_iters`` / ``max_epochs``.

    Raises:
        UnknownConfigKeyError: unknown keys, or overrides of config variables
            (which the runner never reads), naming the keys to set instead.
    """
    if not options:
        return []
    before = cfg.to_dict()
    problems = find_unknown_cfg_options(before, options)
    if problems:
        raise UnknownConfigKeyError(
            f'--cfg-options has {len(problems)} key(s) that config '
            f'{getattr(cfg, "filename", "<config>")} does not have and mmengine '
            'would silently add:\n' + _lines(problems) +
            '\nFix the spelling, or check the config with '
            'tools/analysis_tools/print_config.py.')
    problems = _variable_problems(before, options)
    if problems:
        raise UnknownConfigKeyError(
            '--cfg-options would change nothing the runner reads:\n' +
            _lines(problems))
    notes = _fill_none_parents(cfg, options)
    notes += _fill_absent_parents(cfg, options)
    cfg.merge_from_dict(options)
    return notes + _follow_length(cfg, before, options)
