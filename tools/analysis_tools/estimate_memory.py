"""Training memory of a config's model per GPU, estimated on the meta device.

Usage::

    python tools/analysis_tools/estimate_memory.py CONFIG [--gpu-memory 80]
        [--world-size 8] [--shape H W]

Nothing is allocated: the model is built on torch's ``meta`` device and one
training forward of a (1, 3, H, W) input runs with every activation
checkpoint switched off, while ``torch.autograd.graph.saved_tensors_hooks``
records the bytes of each tensor autograd keeps for the backward pass
(parameters excluded), attributed to the backbone's patch embedding,
tokenizer, trunk blocks and the head. The per-sample activation memory of the
config's checkpointing is then:

* trunk blocks with ``backbone.with_cp``: one block input (B, N, C) kept per
  block, plus the largest block's activations while it is recomputed;
* the 4K tokenizer (always checkpointed per chunk of ``chunk_size``
  windows, as the official model): its input windows, plus one chunk's
  activations while it is recomputed;
* the rest (patch embedding, head) as recorded.

Attention is counted as the fused SDPA kernels CUDA runs for bf16 (flash /
memory-efficient): q, k, v, the output and the (B, heads, N) float32
log-sum-exp are kept, never the (N, N) score matrix (the meta device would
otherwise take the math path, which keeps it).

Model state is 16 bytes per parameter (fp32 weights and gradients, AdamW's two
moments), plus 2 for autocast's bf16 weight copy in bf16 training; FSDP
(``strategy`` in the config) divides the 16 bytes by ``--world-size`` and
gathers bf16 parameters one unit at a time (no full copy).
Activations use 2 bytes per element for bf16 training (``AmpOptimWrapper``
with bfloat16 or an FSDP bf16 ``mixed_precision``), else 4. Not counted: the
loss's own intermediate maps (a few output-sized float32 maps), the
all-gathered FSDP unit, the CUDA context and allocator fragmentation, for
which ``--reserve`` GB (default 8) are set aside. The per-GPU batch that fits
is ``(gpu_memory - reserve - state) // per_sample``.
"""
import argparse
import os.path as osp
import sys
from contextlib import contextmanager
from typing import Dict, Optional, Tuple

import torch

GB = 1024**3


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Estimate training memory per GPU (meta device)')
    parser.add_argument('config', help='config file path')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'),
                        help="input size (default: the backbone's img_size)")
    parser.add_argument('--gpu-memory', type=float, default=80.0,
                        help='GPU memory in GB (default 80)')
    parser.add_argument('--reserve', type=float, default=8.0,
                        help='GB set aside for the CUDA context, loss maps '
                        'and fragmentation (default 8)')
    parser.add_argument('--world-size', type=int, default=8,
                        help='GPUs sharing the model state under FSDP '
                        '(default 8)')
    return parser.parse_args(argv)


class SavedBytes:
    """Bytes autograd saves for backward, per named part of the model."""

    def __init__(self, params) -> None:
        self.param_ids = {id(p) for p in params}
        self.part = 'other'
        self.bytes: Dict[str, int] = {}
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
    """Route ``F.scaled_dot_product_attention`` to :class:`_FusedAttention`."""
    functional = torch.nn.functional
    original = functional.scaled_dot_product_attention

    def sdpa(q, k, v, *args, **kwargs):
        return _FusedAttention.apply(q, k, v)

    functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        functional.scaled_dot_product_attention = original


def _attribute(module: torch.nn.Module, recorder: SavedBytes, part: str):
    """Count what ``module``'s forward saves under ``part``."""
    forward = module.forward

    def wrapped(*args, **kwargs):
        with recorder.within(part):
            return forward(*args, **kwargs)

    module.forward = wrapped


def _bf16(cfg) -> bool:
    optim = cfg.get('optim_wrapper') or {}
    if optim.get('dtype') in ('bfloat16', 'bf16'):
        return True
    strategy = cfg.get('strategy') or {}
    mixed = ((strategy.get('model_wrapper') or {}).get('mixed_precision')
             or {})
    return mixed.get('param_dtype') in ('bfloat16', 'bf16')


def _forward(model, inputs):
    """Backbone + head (the estimators' ``_forward``, the 'tensor' mode)."""
    from mmengine.model import BaseModel
    if isinstance(model, BaseModel):
        return model._forward(inputs, None)
    return model(inputs)


def estimate(cfg, shape: Optional[Tuple[int, int]] = None,
             gpu_memory: float = 80.0, reserve: float = 8.0,
             world_size: int = 8) -> Dict:
    """Per-GPU memory of training ``cfg`` (see the module docstring).

    Returns:
        dict with ``params``, ``state_gb``, ``per_sample_gb``,
        ``per_sample_no_cp_gb``, ``parts_gb`` (recorded bytes per part, no
        checkpointing), ``max_batch`` and ``shape``.
    """
    from sapiens2_mm.apis.model_cost import config_input_shape, drop_pretrained
    from sapiens2_mm.registry import MODELS
    model_cfg = cfg.model.to_dict()
    hw = tuple(shape) if shape else config_input_shape(cfg)[0]
    drop_pretrained(model_cfg)
    backbone_cfg = model_cfg.get('backbone', {})
    with_cp = bool(backbone_cfg.get('with_cp', False))
    backbone_cfg['with_cp'] = False
    dtype = torch.bfloat16 if _bf16(cfg) else torch.float32
    with torch.device('meta'):
        model = MODELS.build(model_cfg).to(dtype).train()
        inputs = torch.empty(1, 3, *hw, dtype=dtype)
    params = sum(p.numel() for p in model.parameters())
    backbone = model.backbone
    tokenizer = getattr(backbone, 'tokenizer', None)
    if tokenizer is not None:
        tokenizer.with_cp = False
    recorder = SavedBytes(model.parameters())
    for index, block in enumerate(backbone.blocks):
        _attribute(block, recorder, f'block{index}')
    if tokenizer is not None:
        _attribute(tokenizer, recorder, 'tokenizer')
    _attribute(backbone.patch_embed, recorder, 'patch_embed')
    head = getattr(model, 'decode_head', None) or model.head
    _attribute(head, recorder, 'head')
    with torch.autograd.graph.saved_tensors_hooks(
            recorder.pack, lambda t: t), fused_attention():
        _forward(model, inputs)
    parts = recorder.bytes
    blocks = [v for k, v in parts.items() if k.startswith('block')]
    no_cp = sum(parts.values())
    element = torch.empty((), dtype=dtype).element_size()
    if tokenizer is not None:
        grid = (hw[0] // backbone.patch_size) * (hw[1] // backbone.patch_size)
        windows = grid // backbone.window_size**2
        tokenizer_in = grid * backbone.embed_dims * element
        samples_per_chunk = tokenizer.chunk_size / windows
    else:
        tokenizer_in = samples_per_chunk = 0
    tokenizer_bytes = parts.get('tokenizer', 0)
    tokens = backbone.num_extra_tokens + (hw[0] // backbone.stride) * (
        hw[1] // backbone.stride)
    block_in = tokens * backbone.embed_dims * element
    rest = no_cp - sum(blocks) - parts.get('tokenizer', 0)
    if with_cp:
        per_sample = rest + tokenizer_in + len(blocks) * block_in
        block_peak = max(blocks)
    else:
        per_sample = rest + tokenizer_in + sum(blocks)
        block_peak = 0
    sharded = cfg.get('strategy') is not None
    state = params * 16 / (world_size if sharded else 1)
    if dtype == torch.bfloat16 and not sharded:
        # autocast's bf16 copy of the fp32 weights (FSDP's mixed precision
        # gathers bf16 parameters one unit at a time instead)
        state += params * 2

    def peak(batch: int) -> float:
        # a recomputed segment (one block for the whole batch, or one
        # tokenizer chunk of chunk_size windows whatever the batch) and its
        # activation gradients exist at once during its backward: x 2
        recompute = max(batch * block_peak,
                        tokenizer_bytes * min(batch, samples_per_chunk))
        return state + batch * per_sample + 2 * recompute + reserve * GB

    max_batch = 0
    while peak(max_batch + 1) <= gpu_memory * GB and max_batch < 4096:
        max_batch += 1
    batch = max(max_batch, 1)
    return dict(params=params, state_gb=state / GB,
                per_sample_gb=per_sample / GB,
                recompute_gb=max(block_peak, tokenizer_bytes * min(
                    1, samples_per_chunk)) / GB,
                per_sample_no_cp_gb=no_cp / GB,
                parts_gb={k: v / GB for k, v in parts.items()
                          if not k.startswith('block')} | {
                              'trunk blocks': sum(blocks) / GB},
                max_batch=max_batch, peak_gb=peak(batch) / GB,
                batch=batch, shape=hw, with_cp=with_cp, sharded=sharded,
                dtype=str(dtype).replace('torch.', ''))


def report(name: str, r: Dict, gpu_memory: float) -> str:
    h, w = r['shape']
    parts = ', '.join(f'{k} {v:.2f}' for k, v in r['parts_gb'].items())
    return '\n'.join([
        f'{name}  input {h}x{w}, activations {r["dtype"]}',
        f'  params                   {r["params"]:,}',
        f'  model state              {r["state_gb"]:.1f} GB'
        f'{" (FSDP-sharded)" if r["sharded"] else ""}',
        f'  kept activations/sample  {r["per_sample_gb"]:.2f} GB (trunk '
        f'checkpointing {"on" if r["with_cp"] else "off"}; tokenizer '
        'chunks checkpointed)',
        f'  recomputed segment       {r["recompute_gb"]:.2f} GB',
        f'  no checkpointing/sample  {r["per_sample_no_cp_gb"]:.1f} GB '
        f'({parts} GB)',
        f'  batch per {gpu_memory:g} GB GPU   {r["max_batch"]} (peak '
        f'{r["peak_gb"]:.1f} GB at batch {r["batch"]})',
    ])


def main(argv=None) -> Dict:
    args = parse_args(argv)
    if not osp.isfile(args.config):
        sys.exit(f'error: config file not found: {args.config!r}')
    from mmengine.config import Config

    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    cfg = Config.fromfile(args.config)
    result = estimate(cfg, args.shape, args.gpu_memory, args.reserve,
                      args.world_size)
    print(report(osp.basename(args.config), result, args.gpu_memory))
    return result


if __name__ == '__main__':
    main()
