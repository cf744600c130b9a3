"""Acceptance stage ``parity``: the tiny18 backbone and the five task models
with the official parity weights: CPU fp32 against the official vectors,
the device's fp32 against the CPU's (official and seeded random weights),
and bf16 autocast against fp32 on the device (the documented tolerance:
relative L2 <= 5e-2; pointmap, fp32 in the official recipe, is reported
only)."""
import os.path as osp

from common import DATA, ROOT, TASKS, device

BF16_TOLERANCE = 5e-2


def stage_parity(args, rows) -> None:
    import torch
    from mmengine.config import Config
    from safetensors.torch import load_file

    from sapiens2_mm.engine.hooks.checked_load_hook import map_official_keys
    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils.checkpoint import (
        load_state_dict_checked,
        read_checkpoint,
    )
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    torch.backends.cudnn.allow_tf32 = False
    dev = device(args.dry_run).type
    parity = osp.join(DATA, 'official_parity')
    for name in ('backbone_1k', ) + TASKS:
        cfg = Config.fromfile(osp.join(ROOT, 'tests', 'configs', 'parity',
                                       f'tiny18_{name}.py'))
        files = name.replace('backbone_', '')
        io = load_file(osp.join(parity, f'tiny18_{files}_io.safetensors'))
        expected = [io[k] for k in sorted(io) if k.startswith('output')]

        def forward(model, on, dtype=None, io=io, name=name):
            x = io['input'].to(on)
            with torch.no_grad(), torch.autocast(
                    on, dtype=dtype or torch.float32,
                    enabled=dtype is not None):
                out = model(x) if name.startswith('backbone') else model(
                    x, None, mode='tensor')
            out = out if isinstance(out, (list, tuple)) else [out]
            return [o.float().cpu() for o in out]

        def diff(a, b):
            return max(float((x - y).abs().max()) for x, y in zip(a, b))

        torch.manual_seed(0)
        model = MODELS.build(cfg.model).eval()
        random_cpu = forward(model, 'cpu')
        random_dev = forward(model.to(dev), dev)
        path = osp.join(parity, f'tiny18_{files}.safetensors')
        model = MODELS.build(cfg.model).eval()
        load_state_dict_checked(
            model, map_official_keys(model, read_checkpoint(path)),
            source=path)
        cpu = forward(model, 'cpu')
        on_device = forward(model.to(dev), dev)
        bf16 = forward(model, dev, torch.bfloat16)
        rel = max(float((b - f).norm() / f.norm().clamp_min(1e-12))
                  for b, f in zip(bf16, on_device))
        rows.add(item=name, official_max_abs=diff(cpu, expected),
                 device_vs_cpu=diff(on_device, cpu),
                 random_device_vs_cpu=diff(random_dev, random_cpu),
                 bf16_rel_l2=rel, bf16_tolerance=BF16_TOLERANCE,
                 ok=(diff(cpu, expected) <= 1e-4
                     and diff(on_device, cpu) <= 1e-3
                     and (rel <= BF16_TOLERANCE or name == 'pointmap')))
