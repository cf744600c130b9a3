"""The pieces of tools/analysis_tools/estimate_memory.py's estimate.

:func:`read_setup` reads what a training run does (batch, strategy,
precision, checkpointing) from a config; :func:`record_activations` runs one
training forward on the meta device and records what autograd keeps;
:func:`model_state` and :func:`activation_bytes` turn both into bytes per
GPU. The method and its calibration are described in estimate_memory.py's
docstring and docs/large_models.md.
"""
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: float32 maps per output element that a task's loss keeps or holds during
#: its backward, beyond the head output itself (measured on the CPU with the
#: tiny configs and their real losses, see
#: tools/benchmarks/estimate_memory_calibration.py; rounded up).
LOSS_MAPS = dict(pose=0, seg=9, normal=12, pointmap=26, albedo=12)
#: GPUs per node (HYBRID_SHARD shards within one node).
GPUS_PER_NODE = 8
_DTYPES = {
    'bfloat16': torch.bfloat16, 'bf16': torch.bfloat16,
    'float16': torch.float16, 'fp16': torch.float16, 'half': torch.float16,
    'float32': torch.float32, 'fp32': torch.float32,
}
_SHARDINGS = ('FULL_SHARD', 'SHARD_GRAD_OP', 'NO_SHARD', 'HYBRID_SHARD',
              '_HYBRID_SHARD_ZERO2')


def _dtype(value) -> Optional[torch.dtype]:
    if value is None or isinstance(value, torch.dtype):
        return value
    name = str(value).replace('torch.', '')
    if name not in _DTYPES:
        raise ValueError(f'unknown dtype {value!r}; expected one of '
                         f'{sorted(_DTYPES)}')
    return _DTYPES[name]


def _short(dtype: Optional[torch.dtype]) -> str:
    return {torch.bfloat16: 'bf16', torch.float16: 'fp16',
            torch.float32: 'fp32', None: 'fp32'}[dtype]


@dataclass
class RunSetup:
    """What a training run does, as the config says.

    Attributes:
        batch: per-GPU batch.
        gpus: GPUs of the run.
        strategy: ``'single'`` (one GPU, no strategy), ``'ddp'``,
            ``'fsdp'`` or ``'zero3'`` (DeepSpeed ZeRO-3).
        sharding: FSDP ``sharding_strategy`` (``FULL_SHARD`` for ZeRO-3).
        autocast: autocast dtype of ``AmpOptimWrapper``, None without it.
        param_dtype: FSDP / DeepSpeed low-precision parameter dtype, or None.
        checkpointing: ``'backbone.with_cp'``, ``'strategy'`` or None.
        task: ``'pretrain'`` or the task name (pose, seg, ...), for the loss.
    """
    batch: int
    gpus: int
    strategy: str
    sharding: str = 'FULL_SHARD'
    autocast: Optional[torch.dtype] = None
    param_dtype: Optional[torch.dtype] = None
    checkpointing: Optional[str] = None
    task: str = ''

    @property
    def compute_dtype(self) -> torch.dtype:
        """The dtype activations are kept in."""
        return self.autocast or self.param_dtype or torch.float32

    @property
    def shards(self) -> int:
        """How many GPUs divide the sharded model state."""
        if self.strategy not in ('fsdp', 'zero3') or \
                self.sharding == 'NO_SHARD':
            return 1
        if 'HYBRID' in self.sharding:
            return min(self.gpus, GPUS_PER_NODE)
        return self.gpus

    def describe(self) -> str:
        """One line: strategy, GPUs, batch, precision, checkpointing."""
        kind = {'single': 'one GPU', 'ddp': 'DDP', 'zero3': 'ZeRO-3',
                'fsdp': f'FSDP {self.sharding}'}[self.strategy]
        precision = []
        if self.param_dtype is not None:
            precision.append(f'{_short(self.param_dtype)} parameters')
        if self.autocast is not None:
            precision.append(f'{_short(self.autocast)} autocast')
        return (f'{kind} on {self.gpus} GPU(s), batch {self.batch}/GPU, '
                f'{", ".join(precision) or "fp32"}, activation '
                f'checkpointing {self.checkpointing or "off"}')


def _config_task(cfg) -> str:
    if cfg.model.get('type') == 'Sapiens2Pretrainer':
        return 'pretrain'
    from sapiens2_mm.apis.tasks import find_task
    return find_task(cfg).name


def read_setup(cfg, gpus: int, batch: Optional[int] = None) -> RunSetup:
    """The :class:`RunSetup` of ``cfg`` launched on ``gpus`` GPUs.

    Raises:
        ValueError: a strategy the estimate does not model.
    """
    optim = cfg.get('optim_wrapper') or {}
    autocast = None
    if 'AmpOptimWrapper' in str(optim.get('type', '')):
        # mmengine's autocast uses fp16 when AmpOptimWrapper has no dtype
        autocast = _dtype(optim.get('dtype')) or torch.float16
        if autocast == torch.float32:
            autocast = None
    strategy = cfg.get('strategy') or {}
    kind = str(strategy.get('type', ''))
    with_cp = bool((cfg.model.get('backbone') or {}).get('with_cp', False))
    checkpointing = 'backbone.with_cp' if with_cp else None
    setup = dict(batch=batch or cfg.train_dataloader.batch_size, gpus=gpus,
                 autocast=autocast, task=_config_task(cfg))
    if 'FSDP' in kind:
        wrapper = strategy.get('model_wrapper') or {}
        sharding = str(wrapper.get('sharding_strategy', 'FULL_SHARD'))
        sharding = sharding.replace('ShardingStrategy.', '')
        if sharding not in _SHARDINGS:
            raise ValueError(f'unknown FSDP sharding_strategy {sharding!r}')
        mixed = wrapper.get('mixed_precision') or {}
        check_fn = (strategy.get('activation_checkpointing') or {}).get(
            'check_fn')
        return RunSetup(strategy='fsdp', sharding=sharding,
                        param_dtype=_dtype(mixed.get('param_dtype')),
                        checkpointing='strategy' if check_fn else
                        checkpointing, **setup)
    if 'DeepSpeed' in kind:
        stage = (strategy.get('zero_optimization') or {}).get('stage')
        if stage != 3:
            raise ValueError(f'DeepSpeed ZeRO stage {stage} is not modelled '
                             '(only stage 3, as FSDP FULL_SHARD)')
        bf16 = (strategy.get('bf16') or {}).get('enabled', False)
        return RunSetup(strategy='zero3', checkpointing=checkpointing,
                        param_dtype=torch.bfloat16 if bf16 else None, **setup)
    if kind:
        raise ValueError(f'strategy {kind!r} is not modelled (FSDP and '
                         'DeepSpeed ZeRO-3 are)')
    return RunSetup(strategy='ddp' if gpus > 1 else 'single',
                    checkpointing=checkpointing, **setup)


class SavedBytes:
    """Bytes autograd saves for backward, per named part of the model."""

    def __init__(self, params) -> None:
        self.param_ids = {id(p) for p in params}
        self.part = 'other'
        self.bytes: Dict[str, int] = {}
        self.inputs: Dict[str, int] = {}
        self.seen = set()
        self.keep = []

    def pack(self, tensor: torch.Tensor):
        # a view shares its base's memory: count the base once
        base = tensor if tensor._base is None else tensor._base
        key = id(base)
        if id(tensor) not in self.param_ids and key not in self.param_ids \
                and key not in self.seen:
            self.seen.add(key)
            self.keep.append(base)  # ids stay unique while recording
            self.bytes[self.part] = self.bytes.get(self.part, 0) + (
                base.numel() * base.element_size())
        return tensor

    @contextmanager
    def within(self, part: str):
        previous, self.part = self.part, part
        self.bytes.setdefault(part, 0)
        try:
            yield
        finally:
            self.part = previous


class _FusedAttention(torch.autograd.Function):
    """What a flash-attention forward keeps for backward, on meta tensors."""

    @staticmethod
    def forward(ctx, q, k, v):
        out = q.new_empty(*q.shape[:-1], v.shape[-1])
        lse = q.new_empty(*q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):  # never run: the estimate has no backward
        raise NotImplementedError


@contextmanager
def fused_attention():
    """Route ``F.scaled_dot_product_attention`` to :class:`_FusedAttention`
    (the meta device would otherwise take the math path, which keeps the
    (N, N) score matrix)."""
    functional = torch.nn.functional
    original = functional.scaled_dot_product_attention

    def sdpa(q, k, v, *args, **kwargs):
        return _FusedAttention.apply(q, k, v)

    functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        functional.scaled_dot_product_attention = original


class MetaScalars(TorchDispatchMode):
    """Reading a meta tensor's value (``.item()``, ``bool()``, ``int()``)
    gives ``False`` for a bool tensor and 1 otherwise, so that value checks
    (the pretrainer's EMA step count, index ranges, "no hidden patch") take
    their ordinary branch; none of them changes an activation's shape."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            dtype = args[0].dtype
            if dtype == torch.bool:
                return False
            return 1.0 if dtype.is_floating_point else 1
        return func(*args, **(kwargs or {}))


def _attribute(module: torch.nn.Module, recorder: SavedBytes, part: str,
               per_call: bool = False) -> None:
    """Count what ``module``'s forward saves under ``part`` (with
    ``per_call``: under ``part#k`` for its k-th call, with the bytes of its
    first argument, the input a checkpointed call keeps)."""
    forward = module.forward
    calls = [0]

    def wrapped(*args, **kwargs):
        name = part
        if per_call:
            name = f'{part}#{calls[0]}'
            calls[0] += 1
        if args and isinstance(args[0], torch.Tensor):
            recorder.inputs[name] = recorder.inputs.get(name, 0) + (
                args[0].numel() * args[0].element_size())
        with recorder.within(name):
            return forward(*args, **kwargs)

    module.forward = wrapped


@dataclass
class Recording:
    """What one sample's training forward keeps, from the meta device.

    Attributes:
        params / trainable / frozen: parameter counts.
        max_unit: parameters of the largest block (one FSDP unit).
        outer: parameters in no block (gathered through the whole step
            under FSDP: root and twin units).
        shape: (H, W) of the input.
        parts: recorded bytes per part; block calls are ``block{i}#{k}``.
        inputs: input bytes per block call and of the tokenizer.
        tokenizer_chunk_fraction: one tokenizer chunk in samples (its
            windows over one sample's; 0 without a tokenizer).
        output_numel: elements of the head output per sample.
        input_bytes: the float32 input batch of one sample (all views).
    """
    params: int
    trainable: int
    frozen: int
    max_unit: int
    outer: int
    shape: Tuple[int, int]
    parts: Dict[str, int] = field(default_factory=dict)
    inputs: Dict[str, int] = field(default_factory=dict)
    tokenizer_chunk_fraction: float = 0.0
    output_numel: int = 0
    input_bytes: int = 0

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def _blocks(self) -> List[str]:
        return [k for k in self.parts if k.startswith('block')]

    @property
    def blocks_total(self) -> int:
        return sum(self.parts[k] for k in self._blocks())

    @property
    def block_inputs(self) -> int:
        return sum(self.inputs.get(k, 0) for k in self._blocks())

    @property
    def block_peak(self) -> int:
        return max([self.parts[k] for k in self._blocks()] or [0])

    def summary(self) -> Dict[str, int]:
        """Recorded bytes per part, the block calls summed."""
        out = {k: v for k, v in self.parts.items()
               if not k.startswith('block')}
        out['trunk blocks'] = self.blocks_total
        return out


def _drop_pretrained(cfg) -> None:
    """No checkpoint is read on the meta device."""
    if isinstance(cfg, dict):
        if isinstance(cfg.get('init_cfg'), dict) and \
                cfg['init_cfg'].get('type') == 'Pretrained':
            cfg['init_cfg'] = None
        for value in cfg.values():
            _drop_pretrained(value)
    elif isinstance(cfg, (list, tuple)):
        for value in cfg:
            _drop_pretrained(value)


def pretrain_views(cfg, shape: Tuple[int, int]) -> List[Tuple[int, int]]:
    """(H, W) of each view of the pretraining pipeline's ``MultiView``: the
    ``scale`` of each view's RandomResizedCrop, ``num_views`` times; two
    views of ``shape`` when the pipeline has none."""
    for step in cfg.train_dataloader.dataset.get('pipeline', []):
        if 'MultiView' not in str(step.get('type')):
            continue
        counts = step['num_views']
        counts = counts if isinstance(counts, (list, tuple)) else [counts]
        views = []
        for count, transforms in zip(counts, step['transforms']):
            sizes = [t['scale'] for t in transforms if 'scale' in t]
            size = tuple(sizes[0]) if sizes else tuple(shape)
            views += [size] * count
        return views
    return [tuple(shape)] * 2


def _blocks_of(model: torch.nn.Module):
    from sapiens2_mm.models.layers import Sapiens2Block
    return [m for m in model.modules() if isinstance(m, Sapiens2Block)]


def record_activations(cfg, setup: RunSetup,
                       shape: Optional[Tuple[int, int]] = None) -> Recording:
    """One sample's training forward on the meta device, checkpointing off.

    Task models run their backbone and head (``_forward``); the pretrainer
    runs its whole ``loss`` (student, teacher, decoder, losses) on the views
    of its pipeline. Parameters and activations are in the run's compute
    dtype (autocast's, else FSDP's parameter dtype, else fp32).
    """
    from sapiens2_mm.registry import MODELS
    model_cfg = cfg.model.to_dict()
    backbone_cfg = model_cfg.get('backbone', model_cfg)
    size = backbone_cfg.get('img_size', (1024, 768))
    hw = tuple(shape) if shape else (
        (size, size) if isinstance(size, int) else tuple(size))
    _drop_pretrained(model_cfg)
    backbone_cfg['with_cp'] = False
    dtype = setup.compute_dtype
    with torch.device('meta'):
        model = MODELS.build(model_cfg).to(dtype).train()
    backbone = getattr(model, 'backbone', model)  # or a bare backbone
    tokenizer = getattr(backbone, 'tokenizer', None)
    if tokenizer is not None:
        tokenizer.with_cp = False
    params = list(model.parameters())
    in_blocks = {id(p) for b in _blocks_of(model) for p in b.parameters()}
    recording = Recording(
        params=sum(p.numel() for p in params),
        trainable=sum(p.numel() for p in params if p.requires_grad),
        frozen=sum(p.numel() for p in params if not p.requires_grad),
        max_unit=max([sum(p.numel() for p in b.parameters())
                      for b in _blocks_of(model)] or [0]),
        outer=sum(p.numel() for p in params if id(p) not in in_blocks),
        shape=hw)
    recorder = SavedBytes(params)
    for index, block in enumerate(backbone.blocks):
        _attribute(block, recorder, f'block{index}', per_call=True)
    if tokenizer is not None:
        _attribute(tokenizer, recorder, 'tokenizer')
    _attribute(backbone.patch_embed, recorder, 'patch_embed')
    heads = [getattr(model, n, None) for n in
             ('decode_head', 'head', 'neck', 'dino_head')]
    for head in heads:
        if isinstance(head, torch.nn.Module):
            _attribute(head, recorder, 'head')
    samples = 1
    with torch.autograd.graph.saved_tensors_hooks(
            recorder.pack, lambda t: t), fused_attention():
        if setup.task == 'pretrain':
            # two samples: KoLeo needs a pair per crop; halved below
            samples = 2
            views = [torch.empty(2, 3, *v, dtype=dtype, device='meta')
                     for v in pretrain_views(cfg, hw)]
            with MetaScalars():
                model.loss(views)
            recording.input_bytes = sum(4 * v[0].numel() for v in views)
        else:
            inputs = torch.empty(1, 3, *hw, dtype=dtype, device='meta')
            out = model._forward(inputs, None) if backbone is not model \
                else model(inputs)
            recording.input_bytes = 4 * inputs[0].numel()
            recording.output_numel = sum(
                o.numel() for o in _tensors(out) if o.is_floating_point())
    recording.parts = {k: v // samples for k, v in recorder.bytes.items()}
    recording.inputs = {k: v // samples for k, v in recorder.inputs.items()}
    if tokenizer is not None:
        grid = (hw[0] // backbone.patch_size) * (hw[1] // backbone.patch_size)
        recording.tokenizer_chunk_fraction = tokenizer.chunk_size / (
            grid // backbone.window_size**2)
    return recording


def _tensors(out) -> List[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors(o)]
    return []


def model_state(recording: Recording, setup: RunSetup) -> float:
    """Bytes of model state per GPU (see estimate_memory.py's docstring)."""
    trainable, frozen = recording.trainable, recording.frozen
    full = 16 * trainable + 4 * frozen
    low_copies = 2 * trainable if setup.autocast is not None and \
        setup.param_dtype is None else 0
    if setup.strategy in ('single', 'ddp'):
        buckets = 4 * trainable if setup.strategy == 'ddp' else 0
        return full + buckets + low_copies
    unit = 2 if setup.param_dtype in (torch.bfloat16, torch.float16) else 4
    if setup.sharding == 'NO_SHARD':
        return full + low_copies
    state = full / setup.shards
    if setup.sharding in ('SHARD_GRAD_OP', '_HYBRID_SHARD_ZERO2'):
        # parameters stay gathered from forward to backward
        gathered = recording.params * unit + recording.max_unit * unit
    else:
        # root / twin units gathered with their gradients, two block units
        # in flight (limit_all_gathers) and one block's gradient
        gathered = 2 * recording.outer * unit + 3 * recording.max_unit * unit
    return state + gathered + low_copies


def activation_bytes(recording: Recording, setup: RunSetup,
                     batch: int) -> Dict[str, float]:
    """Activation bytes of ``batch`` samples: ``kept`` (until backward),
    ``transient`` (one block or tokenizer chunk in backward) and ``loss``
    (the loss's float32 maps)."""
    rec = recording
    tokenizer = rec.parts.get('tokenizer', 0)
    rest = rec.total - rec.blocks_total - tokenizer
    if setup.compute_dtype != torch.float32:
        # the float32 batch stays beside the low-precision copy the first
        # layer saves (in fp32 the saved input is the batch itself)
        rest += rec.input_bytes
    kept_tokenizer = rec.inputs.get('tokenizer', 0) if tokenizer else 0
    # measured (tools/benchmarks/estimate_memory_calibration.py): without
    # checkpointing the peak is the kept activations at the start of the
    # backward (each block's backward frees about what it allocates); with
    # it, one recomputed segment (a block for the whole batch, or one
    # tokenizer chunk) is added once
    if setup.checkpointing:
        kept = rest + kept_tokenizer + rec.block_inputs
        block = batch * rec.block_peak
    else:
        kept = rest + kept_tokenizer + rec.blocks_total
        block = 0
    chunk = tokenizer * min(batch, rec.tokenizer_chunk_fraction)
    loss_maps = LOSS_MAPS.get(setup.task, 0) * rec.output_numel * 4
    return dict(kept=batch * kept, transient=max(block, chunk),
                loss=batch * loss_maps)

