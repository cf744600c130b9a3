"""Check tools/analysis_tools/estimate_memory.py against a measured peak.

One training step (forward, loss, backward, clipping, AdamW step) of a small
model runs on the CPU under the torch profiler with ``profile_memory``; the
allocator's live bytes over the step, read from the profiler's allocation
events, give the real peak of tensor memory. The estimator, run on the same
config, shape and batch for one device (reserve 0), predicts it. Printed per
case: measured and predicted peak (MiB), their ratio, and the measured bytes
above the model state per sample against the predicted activations.

Cases:

* ``trunk``: the seg model with a wider backbone (embed 256, 4 blocks) at
  256x192 on random inputs and labels, so that the transformer blocks
  dominate: checkpointing off / on, fp32 / bf16 autocast;
* ``task``: each tiny task config on one batch of its bundled sample data
  through its real loss, which gives the loss's own float32 maps per output
  element (``LOSS_MAPS`` of tools/analysis_tools/memory_model.py).

Example (about 2 minutes on 2 cores)::

    python tools/benchmarks/estimate_memory_calibration.py --out calib.json

bf16 autocast on a CPU without bf16 instructions is emulated (slow, same
bytes). The CUDA allocator rounds block sizes and caches freed blocks, which
this measurement does not see: that is what the estimate's reserve is for.
"""
import argparse
import json
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, osp.join(ROOT, 'tools', 'analysis_tools'))
MIB = 1024**2
TINY = {
    'pose': 'configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py',
    'seg': 'configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py',
    'normal': 'configs/normal/sapiens2-tiny_1xb2-30_densesample-128x96.py',
    'pointmap': 'configs/pointmap/sapiens2-tiny_1xb2-30_densesample-128x96.py',
    'albedo': 'configs/albedo/sapiens2-tiny_1xb2-30_densesample-128x96.py',
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cases', nargs='+',
                        default=['trunk', 'tokenizer', 'task'],
                        choices=['trunk', 'tokenizer', 'task'])
    parser.add_argument('--tasks', nargs='+', default=list(TINY),
                        choices=list(TINY))
    parser.add_argument('--batch', type=int, default=4)
    parser.add_argument('--out', help='write the rows as JSON here')
    return parser.parse_args(argv)


def peak_live_bytes(step) -> int:
    """Peak of the CPU allocator's live bytes during ``step()``, above
    what was allocated when it started (profiler allocation events)."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        step()
    sizes = []

    def walk(nodes):
        for node in nodes:
            if node.tag == _EventType.Allocation:
                sizes.append((node.start_time_ns, node.extra_fields.alloc_size))
            walk(node.children)

    walk(p.profiler.kineto_results.experimental_event_tree())
    live = peak = 0
    for _, size in sorted(sizes):
        live += size
        peak = max(peak, live)
    return peak


#: bare backbones: name -> (arch, input (H, W), 4K tokenizer)
TRUNKS = {
    'trunk': (dict(embed_dims=256, num_layers=4, num_heads=4,
                   feedforward_channels=1024, num_tokenizer_layers=1),
              (384, 288), False),
    # 4K-shaped: 768 windows of 4x4 patches per image, so that a batch of
    # 4 is three tokenizer chunks of 1024 windows
    'tokenizer': (dict(embed_dims=64, num_layers=2, num_heads=2,
                       feedforward_channels=256, num_tokenizer_layers=2),
                  (2048, 1536), True),
}


def trunk_config(name: str, with_cp: bool, bf16: bool, batch: int):
    """A bare backbone of :data:`TRUNKS`."""
    from mmengine.config import Config
    arch, shape, tokenizer = TRUNKS[name]
    return Config(dict(
        model=dict(type='Sapiens2', img_size=shape, patch_size=16, arch=arch,
                   use_tokenizer=tokenizer, out_type='featmap',
                   with_cp=with_cp, init_cfg=None),
        optim_wrapper=dict(
            type='AmpOptimWrapper' if bf16 else 'OptimWrapper',
            dtype='bfloat16' if bf16 else None,
            optimizer=dict(type='AdamW', lr=1e-4)),
        train_dataloader=dict(batch_size=batch)))


def trunk_prediction(cfg, batch: int) -> dict:
    """The estimator's pieces for a bare backbone (no task, no loss maps)."""
    from memory_model import (
        RunSetup,
        activation_bytes,
        model_state,
        record_activations,
    )
    bf16 = cfg.optim_wrapper.type == 'AmpOptimWrapper'
    import torch
    setup = RunSetup(batch=batch, gpus=1, strategy='single',
                     autocast=torch.bfloat16 if bf16 else None,
                     checkpointing='backbone.with_cp'
                     if cfg.model.with_cp else None, task='')
    recording = record_activations(cfg, setup)
    parts = activation_bytes(recording, setup, batch)
    state = model_state(recording, setup)
    return dict(predicted=state + sum(parts.values()), state=state,
                activations=parts['kept'] + parts['transient'], loss=0.0,
                output_bytes=recording.output_numel * 4 * batch)


def task_config(task: str, with_cp: bool, bf16: bool, batch: int):
    from mmengine.config import Config
    cfg = Config.fromfile(osp.join(ROOT, TINY[task]))
    cfg.model.backbone.with_cp = with_cp
    cfg.train_dataloader.batch_size = batch
    cfg.train_dataloader.num_workers = 0
    cfg.train_dataloader.persistent_workers = False
    cfg.train_dataloader.dataset.data_root = osp.join(
        ROOT, cfg.train_dataloader.dataset.data_root)
    if 'ann_file' in cfg.train_dataloader.dataset:
        ann = cfg.train_dataloader.dataset.ann_file
        if not osp.isabs(ann) and not osp.isfile(
                osp.join(cfg.train_dataloader.dataset.data_root, ann)):
            cfg.train_dataloader.dataset.ann_file = osp.join(ROOT, ann)
    if bf16:
        cfg.optim_wrapper.type = 'AmpOptimWrapper'
        cfg.optim_wrapper.dtype = 'bfloat16'
    return cfg


def task_batch(cfg):
    import torch
    from mmengine.runner import Runner
    torch.manual_seed(0)
    loader = Runner.build_dataloader(cfg.train_dataloader)
    data = next(iter(loader))
    return data


def measure(cfg, batch_data, preprocess: bool) -> dict:
    """Build the model and optimizer of ``cfg`` on the CPU, run a warm-up
    step (AdamW state exists), then measure one step."""
    import torch
    from mmengine.optim import build_optim_wrapper

    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).train()
    wrapper_cfg = cfg.optim_wrapper.copy()
    bf16 = wrapper_cfg.get('type') == 'AmpOptimWrapper'
    wrapper_cfg.type = 'OptimWrapper'  # autocast below (CPU)
    wrapper_cfg.pop('dtype', None)
    optim = build_optim_wrapper(model, wrapper_cfg)
    if preprocess:
        data = model.data_preprocessor(batch_data, True)
    else:
        data = dict(inputs=batch_data[0], data_samples=batch_data[1])

    def step():
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
            if preprocess:
                loss, _ = model.parse_losses(model(**data, mode='loss'))
            else:  # a bare backbone: mean square of its feature map
                loss = model(data['inputs'])[0].float().square().mean()
        optim.update_params(loss)

    step()
    state = sum(p.numel() * p.element_size() for p in model.parameters())
    for values in optim.optimizer.state.values():
        state += sum(v.numel() * v.element_size() for v in values.values()
                     if torch.is_tensor(v))
    # the batch on the device counts (allocated before the measured step)
    state += data['inputs'].numel() * data['inputs'].element_size()
    peak = peak_live_bytes(step)
    return dict(measured=state + peak, params=sum(
        p.numel() for p in model.parameters()))


def predict(cfg, batch: int) -> dict:
    from estimate_memory import estimate
    if cfg.model.type == 'Sapiens2':
        return trunk_prediction(cfg, batch)
    r = estimate(cfg, gpus=1, gpu_memory=1e6, reserve=0.0, batch=batch)
    GB = 1024**3
    return dict(predicted=r['peak_gb'] * GB, state=r['state_gb'] * GB,
                output_bytes=r['output_numel'] * 4 * batch,
                activations=(r['kept_gb'] + r['transient_gb']) * GB,
                loss=r['loss_gb'] * GB)


def row(name, cfg, batch, data, preprocess):
    got = measure(cfg, data, preprocess)
    want = predict(cfg, batch)
    return dict(
        case=name, measured_mib=round(got['measured'] / MIB, 1),
        predicted_mib=round(want['predicted'] / MIB, 1),
        ratio=round(want['predicted'] / got['measured'], 3),
        measured_above_state_mib=round(
            (got['measured'] - want['state']) / MIB, 1),
        predicted_activations_mib=round(want['activations'] / MIB, 1),
        predicted_loss_mib=round(want['loss'] / MIB, 1),
        # float32 output-sized maps the measurement holds beyond the
        # prediction without its loss allowance
        loss_maps=round((got['measured'] - want['predicted'] + want['loss'])
                        / want['output_bytes'], 2) if want['loss'] or
        want['output_bytes'] else None)


def main(argv=None):
    args = parse_args(argv)
    import torch

    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    rows = []
    for bf16 in (False, True):
        for with_cp in (False, True):
            tag = f'{"bf16" if bf16 else "fp32"} cp {"on" if with_cp else "off"}'
            for name in TRUNKS:
                if name not in args.cases:
                    continue
                cfg = trunk_config(name, with_cp, bf16, args.batch)
                torch.manual_seed(0)
                inputs = torch.randn(args.batch, 3, *TRUNKS[name][1])
                rows.append(row(f'{name} {tag}', cfg, args.batch,
                                (inputs, None), False))
                print(rows[-1], flush=True)
            if 'task' in args.cases:
                for task in args.tasks:
                    cfg = task_config(task, with_cp, bf16, args.batch)
                    rows.append(row(f'{task} {tag}', cfg, args.batch,
                                    task_batch(cfg), True))
                    print(rows[-1], flush=True)
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(rows, f, indent=2)
    return rows


if __name__ == '__main__':
    main()
