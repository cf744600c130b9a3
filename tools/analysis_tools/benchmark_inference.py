"""Benchmark inference of a task config end to end: model-only, our
overlapped pipeline and a serial per-image loop; eager vs compiled, fp32 vs
bf16; accuracy cost, peak memory and (CUDA) the SDPA backend.

Every figure of one run is measured side by side in the same process, so the
ratios hold on a loaded machine. What is timed (images/s over the photos,
repeated ``--repeat`` times):

* model-only: the network (``forward`` stage: preprocessing on tensors,
  backbone, head, flip test) on the prepared items, batched as the pipeline
  batches them (``--batch-size`` items: pose person crops, seg images);
* pipeline: :class:`~sapiens2_mm.apis.pipelined_runner.PipelinedRunner`
  (decoding, crops, heatmap decoding and writing overlapped with the
  network; crops batched across images) + writing each result and its
  drawing;
* serial: one image at a time as the official demo does: decode the photo,
  crop its people, forward them, decode the heatmaps, draw and write, then
  the next photo.

Fractions of the GEMM peak: FLOPs of one forward counted by
``torch.utils.flop_counter`` / time, over the best of a ``--gemm-size``^3
matmul in the same dtype.

Example (the README figures)::

    python tools/analysis_tools/benchmark_inference.py \
        configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py \
        --arch sapiens2_0.1b --input-size 512 384 \
        --input tests/data/coco_sample --boxes coco \
        --compile --dtypes fp32 bf16
"""
import argparse
import json
import os
import os.path as osp
import resource
import sys
import tempfile
import time

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, osp.join(osp.dirname(osp.abspath(__file__)), '..', '..'))

from sapiens2_mm.apis import BoxFile, FrameReader, init_model  # noqa: E402
from sapiens2_mm.apis.compile import compile_model  # noqa: E402
from sapiens2_mm.apis.inputs import Frame  # noqa: E402
from sapiens2_mm.apis.pipeline_stages import stages_for  # noqa: E402
from sapiens2_mm.apis.pipelined_runner import PipelinedRunner  # noqa: E402
from sapiens2_mm.apis.precision import (  # noqa: E402
    bf16_problem,
    check_dtype,
    set_inference_dtype,
)
from sapiens2_mm.apis.tasks import get_task  # noqa: E402
from sapiens2_mm.apis.writers import OutputLayout  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='task config (pose, seg, ...)')
    parser.add_argument('--checkpoint', help='weights (default: random)')
    parser.add_argument('--arch', help='backbone arch override, e.g. '
                        'sapiens2_0.1b, or a JSON dict of arch fields')
    parser.add_argument('--input-size', type=int, nargs=2, metavar=('H', 'W'),
                        help='network input size override')
    parser.add_argument('--input', nargs='+',
                        default=['tests/data/coco_sample'],
                        help='photos, folders or a video')
    parser.add_argument('--boxes', default='coco',
                        help='pose person boxes: "coco" (the people of '
                        'tests/data/coco_sample/test_coco.json), a bbox JSON '
                        'file, or "image" (whole image)')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--repeat', type=int, default=2,
                        help='passes over the inputs per timing')
    parser.add_argument('--compile', action='store_true',
                        help='also measure the compiled network')
    parser.add_argument('--dtypes', nargs='+', default=['fp32', 'bf16'],
                        choices=['fp32', 'bf16'])
    parser.add_argument('--compile-dtypes', nargs='+', default=['fp32'],
                        choices=['fp32', 'bf16'],
                        help='dtypes measured compiled (each compiles '
                        'anew: minutes on a small CPU)')
    parser.add_argument('--gemm-size', type=int, default=2048)
    parser.add_argument('--threads', type=int, help='torch threads')
    parser.add_argument('--skip-e2e', action='store_true')
    return parser.parse_args(argv)


# -- config overrides --------------------------------------------------------
def _override(cfg, arch, input_size) -> None:
    from sapiens2_mm.models.backbones.arch_zoo import resolve_arch
    model = cfg.model
    if arch:
        arch = json.loads(arch) if arch.startswith('{') else arch
        model.backbone.arch = arch
        dims = resolve_arch(arch)['embed_dims']
        head = model.get('head') or model.get('decode_head')
        head.in_channels = dims
    if input_size:
        h, w = input_size
        model.backbone.img_size = (h, w)
        head = model.get('head') or {}
        decoder = head.get('decoder')
        if decoder is not None and 'input_size' in decoder:
            ratio = decoder['input_size'][0] // decoder['heatmap_size'][0]
            decoder['input_size'] = (w, h)
            decoder['heatmap_size'] = (w // ratio, h // ratio)
        dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
        for step in (dataset.get('pipeline') or []):
            if 'input_size' in step:
                step['input_size'] = (w, h)
            if 'height' in step and 'width' in step:
                step['height'], step['width'] = h, w


def _coco_boxes(path: str) -> str:
    with open(path) as f:
        coco = json.load(f)
    names = {im['id']: im['file_name'] for im in coco['images']}
    boxes = {}
    for ann in coco['annotations']:
        x, y, w, h = ann['bbox']
        boxes.setdefault(names[ann['image_id']], []).append(
            [x, y, x + w, y + h])
    out = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False)
    json.dump(boxes, out)
    out.close()
    return out.name


# -- measurements ------------------------------------------------------------
def _sync(device: str) -> None:
    if device.startswith('cuda'):
        torch.cuda.synchronize()


def _peak_mb(device: str) -> float:
    if device.startswith('cuda'):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def gemm_peak(dtype: torch.dtype, size: int, device: str) -> float:
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    best = float('inf')
    for _ in range(4):
        _sync(device)
        start = time.perf_counter()
        torch.mm(a, b)
        _sync(device)
        best = min(best, time.perf_counter() - start)
        if best > 2:  # emulated bf16: one slow sample is enough
            break
    return 2 * size**3 / best / 1e9


def sdpa_backend(forward, items) -> str:
    """The scaled-dot-product-attention kernel the forward ran."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof, \
            torch.no_grad():
        forward(items)
    names = {e.key for e in prof.key_averages()}
    for key, label in (('cudnn_attention', 'cudnn'),
                       ('flash_attention_for_cpu', 'flash (CPU)'),
                       ('flash_attention', 'flash'),
                       ('efficient_attention', 'memory-efficient')):
        if any(key in n for n in names):
            return label
    return 'math'


class Passes:
    """``repeat`` passes over the inputs; frames are decoded while iterated
    (in the pipeline's reader thread, or inline for the serial loop)."""

    def __init__(self, inputs, repeat: int) -> None:
        self.inputs, self.repeat = inputs, repeat
        self.skipped, self.warnings = [], []

    def __iter__(self):
        for _ in range(self.repeat):
            yield from FrameReader(self.inputs)


class Bench:
    """The model of one config and the prepared items of the inputs."""

    def __init__(self, args) -> None:
        from sapiens2_mm.apis.init_model import load_config
        cfg = load_config(args.config)
        _override(cfg, args.arch, args.input_size)
        self.args = args
        torch.manual_seed(0)
        self.model = init_model(cfg, args.checkpoint, args.device)
        self.task = get_task(self.model.task)
        kwargs = dict(batch_size=args.batch_size)
        if self.model.task == 'pose':
            boxes = args.boxes
            if boxes == 'coco':
                boxes = _coco_boxes('tests/data/coco_sample/test_coco.json')
            if boxes != 'image':
                kwargs['boxes'] = BoxFile(boxes)
        self.inferencer = self.task.build_inferencer(self.model, **kwargs)
        self.stages = stages_for(self.inferencer)
        frames = list(FrameReader(args.input))
        self.frames = frames * args.repeat
        self.items = [it for f in self.frames
                      for it in self.stages.prepare(f)[1]]
        parser = argparse.ArgumentParser()
        self.task.add_cli_arguments(parser)
        self.task_args = parser.parse_args([])
        self.task_args.no_vis = False

    def forward_all(self, items=None) -> list:
        items = self.items if items is None else items
        bs = self.args.batch_size
        out = []
        with torch.no_grad():
            for start in range(0, len(items), bs):
                out += self.stages.forward(items[start:start + bs])
        return out

    def timed(self, fn):
        """(seconds, result) of ``fn`` run in a fresh thread.

        Every variant runs in a thread of its own, as the pipeline's network
        does: on the loaded 2-core CPU the same forward measured 7x slower
        in the main thread than in a worker thread (tiny model, many small
        ops), which would otherwise favour the pipeline.
        """
        import threading
        box = {}

        def run():
            _sync(self.args.device)
            start = time.perf_counter()
            try:
                box['result'] = fn()
            except BaseException as err:  # noqa: BLE001 - re-raised below
                box['error'] = err
            _sync(self.args.device)
            box['seconds'] = time.perf_counter() - start

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        if 'error' in box:
            raise box['error']
        return box['seconds'], box['result']

    def flops(self) -> float:
        counter = FlopCounterMode(display=False)
        with counter:
            self.forward_all(self.items[:self.args.batch_size])
        per_item = counter.get_total_flops() / min(len(self.items),
                                                   self.args.batch_size)
        return per_item * len(self.items)

    # -- end to end --------------------------------------------------------
    def _writer(self, out_dir: str):
        reader = FrameReader(self.args.input)
        layout = OutputLayout(out_dir, reader)
        return layout, self.task.open_writer(layout, self.model,
                                             self.task_args)

    def _write(self, layout, writer, frame, result, index: int) -> None:
        # Unique names per repeat (the layout refuses to overwrite).
        frame = Frame(f'r{index}_{osp.basename(frame.name)}', frame.image,
                      stem=f'r{index}_{frame.stem}')
        writer.write(frame, result)
        vis = self.task.visualize(frame, result, self.model.dataset_meta,
                                  self.task_args)
        if vis is not None:
            from sapiens2_mm.apis.writers import write_image
            write_image(layout.visualisation_path(frame), vis)

    def pipeline(self, out_dir: str) -> list:
        layout, writer = self._writer(out_dir)
        runner = PipelinedRunner(self.inferencer)
        results = []
        passes = Passes(self.args.input, self.args.repeat)
        for index, (frame, result) in enumerate(
                runner.iter_frames(reader=passes)):
            self._write(layout, writer, frame, result, index)
            results.append(result)
        return results

    def serial(self, out_dir: str) -> list:
        layout, writer = self._writer(out_dir)
        results = []
        passes = Passes(self.args.input, self.args.repeat)
        with torch.no_grad():
            for index, frame in enumerate(passes):
                result = self.inferencer.run_batch([frame])[0]
                self._write(layout, writer, frame, result, index)
                results.append(result)
        return results


def _rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def _stack(outputs) -> torch.Tensor:
    return torch.stack([o[0] if isinstance(o, tuple) else o
                        for o in outputs]).float()


def _kpt_shift(bench, ref_out, low_out) -> str:
    stages = bench.stages
    shifts = []
    pos = 0
    for frame in bench.frames[:len(bench.frames) // bench.args.repeat]:
        boxes, items = stages.prepare(frame)
        n = len(items)
        a = stages.finish(frame, boxes, ref_out[pos:pos + n])
        b = stages.finish(frame, boxes, low_out[pos:pos + n])
        pos += n
        shifts.append(np.linalg.norm(a.keypoints - b.keypoints, axis=-1))
    shift = np.concatenate([s.ravel() for s in shifts])
    return (f'keypoint shift median {np.median(shift):.3f} px, 90th '
            f'percentile {np.percentile(shift, 90):.3f} px, max '
            f'{shift.max():.2f} px')


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    for dtype in args.dtypes:
        check_dtype(dtype, args.device, allow_emulated=True)
    bench = Bench(args)
    n_img, n_items = len(bench.frames), len(bench.items)
    print(f'config {args.config}  arch {args.arch or "(config)"}  input '
          f'{args.input_size or "(config)"}  device {args.device}  torch '
          f'threads {torch.get_num_threads()}  task {bench.model.task}')
    print(f'{n_img} images ({args.repeat} passes over {args.input}), '
          f'{n_items} network items, batch {args.batch_size}')
    flops = bench.flops()
    sizes = dict(fp32=args.gemm_size, bf16=min(args.gemm_size, 1024))
    peaks = {d: gemm_peak(check_dtype(d, args.device, True), sizes[d],
                          args.device) for d in args.dtypes}
    for d, p in peaks.items():
        print(f'GEMM peak {d} ({sizes[d]}^3): {p:.1f} GFLOP/s')
    if 'bf16' in peaks and bf16_problem(args.device):
        print(f'note: {bf16_problem(args.device)}; fp32 stays the default')
    if 'fp32' in peaks and 'bf16' in peaks:
        print(f'bf16 GEMM / fp32 GEMM: {peaks["bf16"] / peaks["fp32"]:.2f}x')
    print(f'SDPA backend: {sdpa_backend(bench.forward_all, bench.items[:1])}')

    # -- model only: eager / compiled, fp32 / bf16 --------------------------
    rows, outputs = {}, {}
    eager_forwards = {}
    for name in ('backbone', 'neck', 'head', 'decode_head'):
        part = getattr(bench.model, name, None)
        if isinstance(part, torch.nn.Module):
            eager_forwards[name] = part.forward

    def set_mode(compiled: bool, dtype: str) -> None:
        for name, fwd in eager_forwards.items():
            getattr(bench.model, name).forward = fwd
        if compiled:
            for name in eager_forwards:
                part = getattr(bench.model, name)
                part.forward = compiled_forwards[name]
        set_inference_dtype(bench.model, dtype, allow_emulated=True)

    compiled_forwards = {}
    modes = [(False, d) for d in args.dtypes]
    if args.compile:
        compile_model(bench.model)
        compiled_forwards = {n: getattr(bench.model, n).forward
                             for n in eager_forwards}
        modes += [(True, d) for d in args.dtypes
                  if d in args.compile_dtypes]
    warm = {}
    for compiled, dtype in modes:  # warm-up (compiles), first timing
        set_mode(compiled, dtype)
        key = ('compiled' if compiled else 'eager', dtype)
        start = time.perf_counter()
        # A full batch and the last, shorter one (each compiles once).
        bench.forward_all(bench.items[:args.batch_size])
        if n_items % args.batch_size:
            bench.forward_all(bench.items[:n_items % args.batch_size])
        warm[key] = time.perf_counter() - start
        rows[key], outputs[key] = bench.timed(bench.forward_all)
    # A second round over all modes, interleaved: the best of the two rounds
    # of each mode is compared, so a load change hits every mode alike.
    for compiled, dtype in modes:
        set_mode(compiled, dtype)
        key = ('compiled' if compiled else 'eager', dtype)
        rows[key] = min(rows[key], bench.timed(bench.forward_all)[0])
    # The peak again after the model runs, best of both: a peak measured in
    # a busy moment would inflate the fractions.
    for d in args.dtypes:
        peaks[d] = max(peaks[d], gemm_peak(check_dtype(d, args.device, True),
                                           sizes[d], args.device))
        print(f'GEMM peak {d} ({sizes[d]}^3), best of two: {peaks[d]:.1f} '
              'GFLOP/s')
    for key, seconds in rows.items():
        gflops = flops / seconds / 1e9
        print(f'model-only {key[0]:8s} {key[1]}: {n_img / seconds:7.2f} '
              f'img/s ({n_items / seconds:7.2f} items/s)  {gflops:7.1f} '
              f'GFLOP/s = {100 * gflops / peaks[key[1]]:5.1f}% of the '
              f'{key[1]} GEMM peak (warm-up {warm[key]:.1f} s)')
    print(f'peak memory after model-only runs {_peak_mb(args.device):.0f} MB')
    ref = _stack(outputs[('eager', args.dtypes[0])])
    for key, out in outputs.items():
        if key == ('eager', args.dtypes[0]):
            continue
        low = _stack(out)
        line = (f'{key[0]} {key[1]} vs eager {args.dtypes[0]}: '
                f'{rows[("eager", args.dtypes[0])] / rows[key]:.2f}x speed, '
                f'relative L2 {_rel_l2(low, ref):.2e}, max abs '
                f'{(low - ref).abs().max().item():.2e}')
        if bench.model.task == 'pose':
            line += ', ' + _kpt_shift(
                bench, outputs[('eager', args.dtypes[0])], out)
        print(line)
    set_mode(False, 'fp32')

    # -- end to end: pipeline vs serial (eager fp32) ------------------------
    if args.skip_e2e:
        return
    model_only = rows[('eager', 'fp32')] if ('eager', 'fp32') in rows \
        else None
    # Interleaved rounds, best of each: load changes hit all three alike.
    times = dict(pipe=[], serial=[], model=[])
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(2):
            times['pipe'].append(bench.timed(
                lambda r=rnd: bench.pipeline(osp.join(tmp, f'p{r}')))[0])
            times['serial'].append(bench.timed(
                lambda r=rnd: bench.serial(osp.join(tmp, f's{r}')))[0])
            times['model'].append(bench.timed(bench.forward_all)[0])
        written = sum(len(files) for _, _, files in os.walk(tmp))
    print('  rounds (s): ' + '  '.join(
        f'{k} {", ".join(f"{t:.2f}" for t in v)}' for k, v in times.items()))
    t_pipe, t_serial = min(times['pipe']), min(times['serial'])
    t_model = min(times['model'] + ([model_only] if model_only else []))
    print(f'end-to-end eager fp32 ({written} files written):')
    print(f'  model-only {n_img / t_model:7.2f} img/s')
    print(f'  pipeline   {n_img / t_pipe:7.2f} img/s = {t_model / t_pipe:.2f} '
          'of model-only')
    print(f'  serial     {n_img / t_serial:7.2f} img/s; pipeline / serial = '
          f'{t_serial / t_pipe:.2f}x')
    print(f'peak memory {_peak_mb(args.device):.0f} MB')


if __name__ == '__main__':
    main()
