"""Start an FSDP run without any rank holding the whole model.

mmengine's FSDPStrategy builds the full fp32 model on every rank, runs
``init_weights`` on it, broadcasts it and only then shards it: 20 GB per rank
for 5B, 160 GB on an 8-GPU node before a checkpoint is read. Here:

1. :func:`meta_parameters`: the model is built with its parameters on the
   meta device (shapes, no storage); buffers (RoPE periods, normalisation
   constants) stay real, they are small and their values are set by the
   constructors.
2. :class:`UnitInitializer` is FSDP's ``param_init_fn``. FSDP wraps units
   bottom-up and calls it for each unit still on the meta device; it
   materialises that unit's parameters only, gives them their values and
   FSDP shards them right after. At most one unit (plus, for an EMA teacher,
   its student twin) is held in full at a time.

Values. A unit's values are computed on a *template*: a copy of the unwrapped
meta model, in which only the unit's parameters are real. What the
constructors did to each parameter was recorded during the meta build (the
in-place operations, e.g. ``normal_(0, std)`` of mmcv's ``kaiming_init`` or
``fill_(0)``, and a constant initial value such as ``torch.zeros``); it is
replayed on the unit's parameters, then the model's own ``init_weights`` runs
on the template. Operations on meta parameters do nothing, so the unit
receives what the model's construction and init code give it. Random draws
are seeded per parameter (``(seed, name, k)`` for the k-th draw on it), so a
parameter's value depends on neither the unit layout nor the world size: 1, 2
or 8 ranks start from the same model. Values differ from a plain build (whose
draws follow one stream through all constructors and the init); the
distributions are those of the same init code. A checkpoint to
start from (fine-tuning ``load_from``, testing) or a ``Pretrained`` backbone is
read through a map of the file, so each unit reads its own tensors.

Every rank computes the unit (an error stops all ranks alike, no rank waits in
a collective), then rank 0's values are broadcast, as FSDP's
``sync_module_states`` would do (which refuses CPU tensors, so the CPU/gloo
runs of the tests could not use it).

A parameter whose constructor value cannot be replayed (computed from other
tensors, written through a view, or drawn before registration as with
``nn.Parameter(torch.randn(n))``) and that neither ``init_weights`` nor a
checkpoint sets again is lost on the meta device: the unit is filled with NaN
first and such a parameter is refused by name.
"""
import contextlib
import hashlib
import logging
from collections import defaultdict, deque
from typing import Dict, Iterator, List, Mapping, Optional, Set

import torch
import torch.distributed as dist
from mmengine.logging import MMLogger
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils._python_dispatch import TorchDispatchMode

from .host_memory import release_freed_host_memory

aten = torch.ops.aten


# in-place operations whose result does not depend on the tensor's old values
OVERWRITING = {aten.fill_.Scalar, aten.zero_.default, aten.normal_.default,
               aten.uniform_.default, aten.random_.default,
               getattr(aten.random_, 'from'), aten.random_.to,
               aten.exponential_.default, aten.bernoulli_.float,
               aten.log_normal_.default, aten.cauchy_.default,
               aten.geometric_.default}


class ConstructionLog:
    """What constructors did to each parameter built on the meta device.

    ``ops[storage]`` is a list of ``(op, args, kwargs)`` to replay on the
    real tensor, or None when the value cannot be replayed.
    """

    def __init__(self):
        self.ops: Dict[int, Optional[list]] = {}
        self.geometry: Dict[int, tuple] = {}

    def register(self, param: nn.Parameter, initial: torch.Tensor) -> None:
        """A new meta ``param`` whose value was ``initial``: kept when it is
        one constant (``torch.zeros``, ``torch.ones``), else unknown."""
        key = _storage_key(param)
        self.geometry[key] = (tuple(param.shape), tuple(param.stride()))
        flat = initial.detach().reshape(-1)
        if flat.numel() == 0:
            self.ops[key] = []
        elif (initial.dtype.is_floating_point or initial.dtype in (
                torch.int32, torch.int64, torch.bool)) and bool(
                    (flat == flat[0]).all()):
            self.ops[key] = [(aten.fill_.Scalar, (flat[0].item(),), {})]
        else:
            self.ops[key] = None

    def record(self, func, tensor: torch.Tensor, args: tuple,
               kwargs: dict) -> None:
        key = _storage_key(tensor)
        if key not in self.ops:
            return
        whole = (tuple(tensor.shape), tuple(tensor.stride())) == (
            self.geometry[key]) and tensor.storage_offset() == 0
        plain = not any(isinstance(a, (torch.Tensor, torch.Generator))
                        for a in (*args, *kwargs.values()))
        if not (whole and plain):
            self.ops[key] = None
        elif func in OVERWRITING:
            self.ops[key] = [(func, args, kwargs)]
        elif self.ops[key] is not None:
            self.ops[key].append((func, args, kwargs))

    def by_name(self, model: nn.Module) -> Dict[str, Optional[list]]:
        """The recorded operations of each parameter of ``model``."""
        return {name: self.ops.get(_storage_key(param))
                for name, param in model.named_parameters(
                    remove_duplicate=False)}


class _RecordConstruction(TorchDispatchMode):
    """Records in-place operations on meta parameters into a log."""

    def __init__(self, log: ConstructionLog):
        super().__init__()
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (args and isinstance(args[0], torch.Tensor) and args[0].is_meta
                and _writes_first_argument(func)):
            self.log.record(func, args[0], tuple(args[1:]), dict(kwargs))
        return func(*args, **kwargs)


def _writes_first_argument(func) -> bool:
    arguments = func._schema.arguments
    return bool(arguments) and arguments[0].alias_info is not None and (
        arguments[0].alias_info.is_write)


@contextlib.contextmanager
def meta_parameters() -> Iterator[ConstructionLog]:
    """Build modules with every ``nn.Parameter`` on the meta device.

    Registering a parameter moves it to the meta device, so a constructor's
    initialisation of it does nothing; a parameter is allocated only for the
    moment between its creation and registration. Buffers are left as they
    are. Yields the :class:`ConstructionLog` of what the constructors did.
    """
    log = ConstructionLog()
    original = nn.Module.register_parameter

    def register(module, name, param):
        if type(param) is nn.Parameter and not param.is_meta:
            initial = param
            param = nn.Parameter(param.detach().to('meta'),
                                 requires_grad=param.requires_grad)
            log.register(param, initial)
        original(module, name, param)

    nn.Module.register_parameter = register
    try:
        with _RecordConstruction(log):
            yield log
    finally:
        nn.Module.register_parameter = original


def has_meta_parameters(model: nn.Module) -> bool:
    return any(p.is_meta for p in model.parameters())


def pretrained_blockers(model: nn.Module) -> List[str]:
    """Modules whose ``init_cfg`` loads a ``Pretrained`` file through
    mmengine's generic initializer, which reads the whole file into each
    rank; only the Sapiens2 backbone reads per unit (a map of the file)."""
    from ...models.backbones import Sapiens2
    found = []
    for name, module in model.named_modules():
        cfgs = getattr(module, 'init_cfg', None) or []
        if isinstance(module, Sapiens2) and isinstance(cfgs, dict):
            continue  # Sapiens2.init_weights reads it itself
        cfgs = [cfgs] if isinstance(cfgs, dict) else list(cfgs)
        if any(isinstance(c, dict) and c.get('type') == 'Pretrained'
               for c in cfgs):
            found.append(name or type(module).__name__)
    return found


def _unset(dtype: torch.dtype):
    """The value of a tensor nothing has set: NaN, or 0 for integers."""
    return float('nan') if dtype.is_floating_point else 0


def _param_seed(seed: int, name: str, k: int) -> int:
    digest = hashlib.sha256(f'{seed}/{name}/{k}'.encode()).digest()
    return int.from_bytes(digest[:8], 'little') & ((1 << 63) - 1)


def _storage_key(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


class _NeedsValues(Exception):
    """The init code read parameters that are still on the meta device."""

    def __init__(self, names: Set[str]):
        super().__init__(sorted(names))
        self.names = names


class _SeededInit(TorchDispatchMode):
    """Dispatch mode of a template init run.

    * Before a random draw into a template parameter (``uniform_``,
      ``normal_``, ...), the generator is seeded from (seed, name, k).
    * Reading a meta template parameter into a real tensor (the EMA teacher
      copying its student) raises :class:`_NeedsValues` so that the caller
      materialises it too; reading any other meta tensor (mmengine's init
      bookkeeping takes ``param.mean().cpu()``) gives NaN.
    """

    def __init__(self, names_by_storage: Dict[int, str], seed: int):
        super().__init__()
        self.names = names_by_storage
        self.seed = seed
        self.draws = defaultdict(int)

    def _name(self, tensor) -> Optional[str]:
        if not isinstance(tensor, torch.Tensor):
            return None
        return self.names.get(_storage_key(tensor))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (torch.Tag.nondeterministic_seeded in func.tags and args
                and kwargs.get('generator') is None):
            name = self._name(args[0])
            if name is not None and not args[0].is_meta:
                torch.manual_seed(_param_seed(self.seed, name,
                                              self.draws[name]))
                self.draws[name] += 1
        if func is aten._to_copy.default and args[0].is_meta:
            device = kwargs.get('device')
            if device is not None and torch.device(device).type != 'meta':
                self._from_meta(args[0])
                dtype = kwargs.get('dtype') or args[0].dtype
                return torch.full(args[0].shape, _unset(dtype), dtype=dtype,
                                  device=device)
        if func is aten.copy_.default and args[1].is_meta and not (
                args[0].is_meta):
            self._from_meta(args[1])
            return args[0].fill_(_unset(args[0].dtype))
        return func(*args, **kwargs)

    def _from_meta(self, source: torch.Tensor) -> None:
        name = self._name(source)
        if name is not None:
            raise _NeedsValues({name})


class _QuietAfterFirst(logging.Filter):
    """Drops the log records of every template run after the first (one
    ``Pretrained: loaded ...`` line, not one per unit)."""

    def __init__(self):
        super().__init__()
        self.active = False

    def filter(self, record):
        return not self.active


class UnitInitializer:
    """FSDP ``param_init_fn`` that materialises and initialises one unit.

    Args:
        model: the unwrapped model, parameters on the meta device (built
            under :func:`meta_parameters`). A template copy is taken now.
        construction: the log :func:`meta_parameters` gave for ``model``.
        seed: the run's seed (the same on every rank).
        device: where the unit's parameters live (FSDP's ``device_id``).
        run_init: run ``init_weights`` (False for testing, where every value
            comes from the checkpoint).
        checkpoint_state: tensors (names of ``model.state_dict()``) that
            overwrite the initial values, e.g. a fine-tuning ``load_from``,
            already checked against the model.
    """

    def __init__(self, model: nn.Module, *, construction: ConstructionLog,
                 seed: int, device: torch.device,
                 run_init: bool = True,
                 checkpoint_state: Optional[Mapping[str, torch.Tensor]] = None):
        import copy
        self.template = copy.deepcopy(model)
        self.template_params = dict(
            self.template.named_parameters(remove_duplicate=False))
        self.template_modules = dict(self.template.named_modules())
        self.module_names = {id(m): n for n, m in model.named_modules()}
        self.construction = construction.by_name(model)
        self.seed = seed
        self.device = torch.device(device)
        self.run_init = run_init
        self.checkpoint_state = checkpoint_state or {}
        self.quiet = _QuietAfterFirst()
        self.model = model
        self.units = 0
        self.model_bytes = sum(_nbytes(p) for p in model.parameters())
        self.largest_unit_bytes = 0
        self.peak_template_bytes = 0
        self.peak_materialized_bytes = 0

    # ------------------------------------------------------------ FSDP hook
    def __call__(self, module: nn.Module) -> None:
        """Called by FSDP for each module of a unit still on the meta device
        (the unit's root first); the first call does the whole unit."""
        modules = _unit_modules(module)
        params = [(self._name(m, n), m, n) for m in modules
                  for n, p in m._parameters.items()
                  if p is not None and p.is_meta]
        if not params:
            return
        values = self._unit_values([name for name, _, _ in params])
        unit_bytes = 0
        for name, owner, attr in params:
            old = owner._parameters[attr]
            new = nn.Parameter(values[name].to(self.device),
                               requires_grad=old.requires_grad)
            new.__dict__.update(old.__dict__)  # e.g. the recorded full shape
            owner._parameters[attr] = new
            unit_bytes += new.numel() * new.element_size()
        del values
        self._note_materialized()
        buffers = self._set_buffers(modules)
        self._check_set(params)
        self._broadcast([o._parameters[a] for _, o, a in params] + buffers)
        release_freed_host_memory()  # the previous unit's unsharded copy
        self.units += 1
        self.largest_unit_bytes = max(self.largest_unit_bytes, unit_bytes)

    def _name(self, module: nn.Module, attr: str) -> str:
        prefix = self.module_names[id(module)]
        return f'{prefix}.{attr}' if prefix else attr

    # ------------------------------------------------------ unit values
    def _unit_values(self, names: List[str]) -> Dict[str, torch.Tensor]:
        """Initial values of ``names``: the checkpoint's where it has them,
        the template init's otherwise."""
        from_init = [n for n in names if n not in self.checkpoint_state]
        values = {}
        if from_init:
            values.update(self._template_values(from_init))
        for name in names:
            if name in self.checkpoint_state:
                own = self.template_params[name]
                values[name] = self.checkpoint_state[name].to(
                    own.dtype).reshape(own.shape).clone()
        return values

    def _template_values(self, names: List[str]) -> Dict[str, torch.Tensor]:
        needed = set(names)
        try:
            while True:
                self._materialize(needed)
                self.peak_template_bytes = max(
                    self.peak_template_bytes,
                    sum(_nbytes(self.template_params[n]) for n in needed))
                try:
                    self._run_template_init(needed)
                    self._note_materialized()
                    break
                except _NeedsValues as err:
                    if err.names <= needed:
                        raise RuntimeError(
                            f'meta init: the init code read {sorted(err.names)}'
                            ' without their values') from err
                    needed |= err.names
            return {n: self.template_params[n].detach().clone()
                    for n in names}
        finally:
            self._release(needed)

    def _note_materialized(self) -> None:
        """Record the parameter bytes this rank holds now: the model's
        (shards of wrapped units, the unit being initialised) and the
        template's."""
        held = _real_parameter_bytes(self.model, self.template)
        self.peak_materialized_bytes = max(self.peak_materialized_bytes,
                                           held)

    def _materialize(self, names: Set[str]) -> None:
        for name in names:
            owner, attr = self._template_owner(name)
            old = owner._parameters[attr]
            real = torch.full(old.shape, _unset(old.dtype), dtype=old.dtype)
            owner._parameters[attr] = nn.Parameter(
                real, requires_grad=old.requires_grad)
        self.template_params = dict(
            self.template.named_parameters(remove_duplicate=False))

    def _release(self, names: Set[str]) -> None:
        for name in names:
            owner, attr = self._template_owner(name)
            old = owner._parameters[attr]
            if not old.is_meta:
                owner._parameters[attr] = nn.Parameter(
                    old.detach().to('meta'), requires_grad=old.requires_grad)
        self.template_params = dict(
            self.template.named_parameters(remove_duplicate=False))

    def _template_owner(self, name: str):
        prefix, _, attr = name.rpartition('.')
        return self.template_modules[prefix], attr

    def _run_template_init(self, names: Set[str]) -> None:
        """The constructors' recorded operations on ``names``, then the
        model's ``init_weights``, on the template."""
        storage = {}
        for name, param in self.template_params.items():
            storage.setdefault(_storage_key(param), name)
        logger = MMLogger.get_current_instance()
        logger.addFilter(self.quiet)
        try:
            with torch.random.fork_rng(devices=[]), torch.no_grad(), \
                    _SeededInit(storage, self.seed):
                for name in sorted(names):
                    param = self.template_params[name]
                    for func, args, kwargs in self.construction.get(
                            name) or []:
                        func(param, *args, **kwargs)
                if self.run_init and callable(
                        getattr(self.template, 'init_weights', None)):
                    with _fresh_init_state(self.template):
                        self.template.init_weights()
        finally:
            logger.removeFilter(self.quiet)
            self.quiet.active = True

    # ------------------------------------------------------ buffers, checks
    def _set_buffers(self, modules: List[nn.Module]) -> List[torch.Tensor]:
        """Copy the template's buffers (init may set them) and the
        checkpoint's into the unit's buffers; returns them."""
        out = []
        for module in modules:
            for attr, buf in module._buffers.items():
                if buf is None:
                    continue
                name = self._name(module, attr)
                source = self.checkpoint_state.get(name)
                if source is None:
                    owner, _ = self._template_owner(name)
                    source = owner._buffers[attr]
                buf = module._buffers[attr] = buf.to(self.device)
                buf.copy_(source.reshape(buf.shape))
                out.append(buf)
        return out

    def _check_set(self, params) -> None:
        unset = [name for name, owner, attr in params
                 if owner._parameters[attr].dtype.is_floating_point
                 and torch.isnan(owner._parameters[attr]).any()]
        if unset:
            raise RuntimeError(
                f'init_on_meta: {len(unset)} parameter(s) are set by no '
                'replayable constructor operation, init_weights or checkpoint '
                f'({unset[:5]}); their constructor values are lost on the '
                'meta device. Initialise them in init_weights, or set '
                'strategy.init_on_meta=False.')

    def _broadcast(self, tensors: List[torch.Tensor]) -> None:
        if not dist.is_initialized() or dist.get_world_size() == 1:
            return
        for tensor in tensors:
            dist.broadcast(tensor.data, src=0)

    def report(self) -> dict:
        """Units initialised; parameter bytes of the whole model, of the
        largest unit, of the most template parameters computed at once, and
        the most parameter bytes this rank held at any point of the start
        (model shards, the unit and the template together)."""
        return dict(units=self.units, model_bytes=self.model_bytes,
                    largest_unit_bytes=self.largest_unit_bytes,
                    peak_template_bytes=self.peak_template_bytes,
                    peak_materialized_bytes=self.peak_materialized_bytes)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _real_parameter_bytes(*modules: nn.Module) -> int:
    """Bytes of the storages behind the non-meta parameters of ``modules``
    (FSDP's views of one flat shard counted once)."""
    seen, total = set(), 0
    for module in modules:
        for param in module.parameters():
            if param.is_meta:
                continue
            storage = param.untyped_storage()
            if storage._cdata not in seen:
                seen.add(storage._cdata)
                total += storage.nbytes()
    return total


def _unit_modules(root: nn.Module) -> List[nn.Module]:
    """``root`` and its submodules down to (not into) FSDP units, in FSDP's
    breadth-first order."""
    found, queue, seen = [], deque([root]), {id(root)}
    while queue:
        module = queue.popleft()
        found.append(module)
        for child in module.children():
            if id(child) not in seen and not isinstance(child, FSDP):
                seen.add(id(child))
                queue.append(child)
    return found


@contextlib.contextmanager
def _fresh_init_state(model: nn.Module) -> Iterator[None]:
    """Let mmengine's ``init_weights`` run again on the template.

    ``BaseModule`` marks itself initialised (``_is_init``) and, at the top
    level, records every parameter's mean to report which init touched it,
    then logs that report. Here the flags are cleared and the bookkeeping
    dict is given beforehand, so the template is initialised anew each time
    and the report (the same for every unit) is not logged again.
    """
    modules = list(model.modules())
    for module in modules:
        if hasattr(module, '_is_init'):
            module._is_init = False
    info = defaultdict(dict)
    for param in model.parameters():
        info[param] = dict(init_info='', tmp_mean_value=torch.tensor(0.))
    for module in modules:
        module._params_init_info = info
    try:
        yield
    finally:
        for module in modules:
            module.__dict__.pop('_params_init_info', None)
