"""Acceptance stages ``speed_0_4b`` / ``speed_1b`` and ``compile_*``.

Per task at 1024x768 (tiny configs at 128x96 with --dry-run):

* training: one sample through the config's train pipeline, repeated to the
  config's per-GPU batch and moved to the GPU once; then forward, loss,
  backward and the optimizer step of the config's optimizer wrapper
  (precision and checkpointing as the config; one GPU, no FSDP), timed:
  images per second, peak memory, and tools/analysis_tools/estimate_memory.py's
  prediction for the same run beside it;
* inference: a random batch on the GPU, eager, fp32 and bf16 autocast:
  images per second;
* the official code: the backbone of a carried snapshot (.official/sapiens2,
  sapiens/backbones/standalone/sapiens2.py) against ours with the same
  weights and inputs: the largest fp32 difference and the bf16 speed ratio;
* compiled (``compile_*``): the backbone compiled once per size
  (sapiens2_mm.runtime.compile_model; compile time reported on its own), the
  heads eager, bf16: images per second against eager in the same process.
"""
import importlib.util
import os.path as osp
import sys
import time

from common import (
    OFFICIAL,
    ROOT,
    TASKS,
    device,
    load_config,
    one_batch,
    peak_mib,
    reset_peak,
    timed,
)

INFER_BATCH = 8
ARCH = {'0.4b': 'sapiens2_0.4b', '1b': 'sapiens2_1b'}


def _build(cfg, dev):
    import torch

    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    with torch.device(dev):  # parameters made and initialised on the device
        model = MODELS.build(cfg.model)
    return model.to(dev)


def _estimate(cfg, batch: int):
    """estimate_memory.py's peak for this run (one GPU, no reserve), MiB."""
    sys.path.insert(0, osp.join(ROOT, 'tools', 'analysis_tools'))
    from estimate_memory import estimate
    single = cfg.copy()
    single.pop('strategy', None)
    single.pop('runner_type', None)
    result = estimate(single, 1, gpu_memory=1e6, reserve=0.0, batch=batch)
    return round(result['peak_gb'] * 1024, 1)


def train_speed(task: str, size: str, dry_run: bool, rows) -> None:
    from mmengine.optim import build_optim_wrapper

    from sapiens2_mm.engine.optimizers import use_sapiens2_amp
    dev = device(dry_run)
    cfg, path = load_config(task, size, dry_run)
    batch = 2 if dry_run else cfg.train_dataloader.batch_size
    wrapper = cfg.optim_wrapper.copy()
    use_sapiens2_amp(wrapper, sharded=False)
    if dry_run:  # CPU: fp32 (bf16 autocast is emulated there)
        wrapper.type = 'OptimWrapper'
        for key in ('use_fsdp', 'dtype', 'loss_scale'):
            wrapper.pop(key, None)
    data = one_batch(cfg, batch)
    reset_peak(dev)
    model = _build(cfg, dev).train()
    optim = build_optim_wrapper(model, wrapper)
    data = model.data_preprocessor(data, True)  # on the device, once

    def step():
        with optim.optim_context(model):
            losses = model(**data, mode='loss')
        loss, _ = model.parse_losses(losses)
        optim.update_params(loss)

    seconds = timed(step, dev, warmup=1 if dry_run else 2,
                    repeat=1 if dry_run else 4)
    rows.add(item=f'{size} {task} train', config=path, batch=batch,
             precision=str(getattr(optim, 'cast_dtype', 'float32')),
             checkpointing=bool(cfg.model.backbone.get('with_cp')),
             img_s=round(batch / seconds, 2), peak_mib=peak_mib(dev),
             estimate_mib=_estimate(cfg, batch), ok=seconds > 0)


def infer_speed(task: str, size: str, dry_run: bool, rows) -> None:
    import torch
    dev = device(dry_run)
    cfg, path = load_config(task, size, dry_run)
    h, w = (128, 96) if dry_run else (1024, 768)
    batch = 2 if dry_run else INFER_BATCH
    reset_peak(dev)
    model = _build(cfg, dev).eval()
    x = torch.randn(batch, 3, h, w, device=dev)
    for dtype in ('fp32', 'bf16'):
        if dry_run and dtype == 'bf16':
            continue  # emulated on most CPUs: no figure worth printing

        def forward(dtype=dtype):
            with torch.no_grad(), torch.autocast(
                    dev.type, dtype=torch.bfloat16, enabled=dtype == 'bf16'):
                model(x, None, mode='tensor')

        seconds = timed(forward, dev, warmup=1 if dry_run else 2,
                        repeat=1 if dry_run else 5)
        rows.add(item=f'{size} {task} infer {dtype}', config=path,
                 batch=batch, img_s=round(batch / seconds, 2),
                 peak_mib=peak_mib(dev), ok=seconds > 0)


def _official_module():
    path = osp.join(OFFICIAL, 'sapiens', 'backbones', 'standalone',
                    'sapiens2.py')
    if not osp.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location('official_sapiens2', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def official_backbone(size: str, dry_run: bool, rows) -> None:
    """Ours against the official backbone: same weights, same inputs."""
    import torch

    from sapiens2_mm.engine.hooks.checked_load_hook import map_official_keys
    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils.checkpoint import load_state_dict_checked
    official = _official_module()
    if official is None:
        rows.add(item=f'{size} official backbone', status='skipped',
                 reason=f'no official snapshot in {OFFICIAL} (git clone '
                 '--depth 1 https://github.com/facebookresearch/sapiens2 '
                 '.official/sapiens2, then carry .official)', ok=True)
        return
    dev = device(dry_run)
    arch = 'sapiens2_0.1b' if dry_run else ARCH[size]
    h, w = (64, 48) if dry_run else (1024, 768)
    torch.manual_seed(0)
    with torch.device(dev):
        theirs = official.Sapiens2(arch=arch, img_size=(h, w), patch_size=16,
                                   out_type='raw').eval()
        ours = MODELS.build(dict(type='Sapiens2', arch=arch, img_size=(h, w),
                                 patch_size=16, out_type='raw',
                                 init_cfg=None)).eval()
    load_state_dict_checked(ours, map_official_keys(
        ours, theirs.state_dict()), source='official backbone')
    batch = 2 if dry_run else INFER_BATCH
    x = torch.randn(batch, 3, h, w, device=dev)
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    with torch.no_grad():
        diff = float((ours(x)[0] - theirs(x)[0]).abs().max())
    torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    speed = {}
    for name, net in (('ours', ours), ('official', theirs)):

        def forward(net=net):
            with torch.no_grad(), torch.autocast(
                    dev.type, dtype=torch.bfloat16, enabled=not dry_run):
                net(x)

        speed[name] = batch / timed(forward, dev, 1 if dry_run else 2,
                                    1 if dry_run else 5)
    rows.add(item=f'{size} official backbone', arch=arch, fp32_max_abs=diff,
             ours_img_s=round(speed['ours'], 2),
             official_img_s=round(speed['official'], 2),
             ours_vs_official=round(speed['ours'] / speed['official'], 3),
             ok=diff <= 1e-3)


def stage_speed(args, rows, size: str) -> None:
    for task in TASKS:
        train_speed(task, size, args.dry_run, rows)
    for task in TASKS:
        infer_speed(task, size, args.dry_run, rows)
    official_backbone(size, args.dry_run, rows)


def stage_compiled(args, rows, size: str) -> None:
    import torch

    from sapiens2_mm.runtime.compilation import compile_model
    dev = device(args.dry_run)
    h, w = (128, 96) if args.dry_run else (1024, 768)
    batch = 2 if args.dry_run else INFER_BATCH
    x = torch.randn(batch, 3, h, w, device=dev)
    enabled = not args.dry_run  # bf16 (emulated on most CPUs: fp32 there)
    backbone = None
    for task in TASKS:
        cfg, path = load_config(task, size, args.dry_run)
        model = _build(cfg, dev).eval()
        if backbone is None:  # one compiled backbone serves every task
            backbone = model.backbone
        else:
            model.backbone = backbone

        def forward(model=model):
            with torch.no_grad(), torch.autocast(dev.type,
                                                 dtype=torch.bfloat16,
                                                 enabled=enabled):
                model(x, None, mode='tensor')

        eager = batch / timed(forward, dev, 1, 1 if args.dry_run else 5)
        if not getattr(backbone, 'compiled_parts', None):
            # --dry-run: dynamo's tracing with the eager backend (inductor's
            # CPU code generation would take minutes here)
            compile_model(backbone,
                          backend='eager' if args.dry_run else 'inductor')
            start = time.perf_counter()
            forward()
            if dev.type == 'cuda':
                torch.cuda.synchronize(dev)
            rows.add(item=f'{size} backbone compile',
                     backend='eager' if args.dry_run else 'inductor',
                     compile_s=round(time.perf_counter() - start, 1),
                     ok=bool(getattr(backbone, 'compiled_parts', None)))
        compiled = batch / timed(forward, dev, 1, 1 if args.dry_run else 5)
        rows.add(item=f'{size} {task} infer '
                 f'{"bf16" if enabled else "fp32"} compiled', config=path,
                 batch=batch, img_s=round(compiled, 2),
                 eager_img_s=round(eager, 2),
                 compiled_vs_eager=round(compiled / eager, 3), ok=True)
