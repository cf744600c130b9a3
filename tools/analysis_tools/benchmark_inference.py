"""Benchmark inference of a task config end to end: model-only, our
overlapped pipeline and a serial per-image loop; eager vs compiled, fp32 vs
bf16; accuracy cost, peak memory and (CUDA) the SDPA backend.

Every figure of one run is measured side by side in the same process, in
``--rounds`` interleaved rounds whose order rotates; each ratio is taken
within a round and the median over the rounds is printed (with each round's),
so a load change hits every variant alike. What is timed (images/s over the
photos, repeated ``--repeat`` times):

* model-only: the network (``forward`` stage: preprocessing on tensors,
  backbone, head, flip test) on the prepared items, batched as the pipeline
  batches them (``--batch-size`` items: pose person crops, seg images);
* pipeline: the overlapped :class:`~sapiens2_mm.apis.frame_pipeline.FramePipeline`
  (decoding, crops, heatmap decoding overlapped with the network on
  ``--workers`` threads; crops batched across images), then drawing and
  encoding on as many threads and writing in order, as tools/infer.py;
* serial: one image at a time as the official demo does: decode the photo,
  crop its people, forward them all in one batch, decode the heatmaps, draw
  and write, then the next photo.

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
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Tuple

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, osp.join(osp.dirname(osp.abspath(__file__)), '..', '..'))

from sapiens2_mm.apis import BoxFile, FrameReader, init_model  # noqa: E402
from sapiens2_mm.apis.frame_pipeline import (  # noqa: E402
    default_workers,
    render_frames,
)
from sapiens2_mm.apis.inputs import Frame  # noqa: E402
from sapiens2_mm.apis.tasks import get_task  # noqa: E402
from sapiens2_mm.apis.writers import OutputLayout, write_image  # noqa: E402
from sapiens2_mm.runtime.compilation import (  # noqa: E402
    COMPILED_PARTS,
    compile_model,
)
from sapiens2_mm.runtime.precision import (  # noqa: E402
    bf16_problem,
    check_dtype,
    set_inference_dtype,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='task config (pose, seg, ...; '
                        'stock mmpose top-down and mmseg configs too)')
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
    parser.add_argument('--workers', type=int,
                        help='pipeline threads decoding and preparing '
                        'frames, and drawing them (default: half the cores, '
                        '1 to 4)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='interleaved timing rounds; every ratio is '
                        'taken within a round (median reported)')
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
        if 'img_size' in model.backbone:  # ViTs; a CNN takes any size
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


#: Serial loop batch size: every person crop of a photo in one forward.
PHOTO_AT_ONCE = 1 << 16


class Passes:
    """``repeat`` passes over the inputs: decode jobs for the pipeline's
    workers, or frames decoded inline for the serial loop."""

    def __init__(self, inputs, repeat: int) -> None:
        self.inputs, self.repeat = inputs, repeat
        self.skipped, self.warnings = [], []

    def jobs(self):
        for _ in range(self.repeat):
            yield from FrameReader(self.inputs).jobs()

    def record(self, loaded):
        return FrameReader.record(self, loaded)

    def __iter__(self):
        for _ in range(self.repeat):
            yield from FrameReader(self.inputs)


class Bench:
    """The model of one config and the prepared items of the inputs."""

    def __init__(self, args) -> None:
        from sapiens2_mm.utils.config_file import load_config
        cfg = load_config(args.config)
        _override(cfg, args.arch, args.input_size)
        self.args = args
        torch.manual_seed(0)
        self.model = init_model(cfg, args.checkpoint, args.device)
        self.task = get_task(self.model.task)
        kwargs = dict(batch_size=args.batch_size)
        if self.model.task == 'pose':
            boxes = args.boxes
            if boxes == 'coco':  # a COCO annotation file is a bbox file
                boxes = 'tests/data/coco_sample/test_coco.json'
            if boxes != 'image':
                kwargs['boxes'] = BoxFile(boxes)
        self.inferencer = self.task.build_inferencer(self.model, **kwargs)
        # The official demo forwards all the people of a photo at once.
        self.serial_inferencer = self.task.build_inferencer(
            self.model, **dict(kwargs, batch_size=PHOTO_AT_ONCE))
        frames = list(FrameReader(args.input))
        self.frames = frames * args.repeat
        self.items = [it for f in self.frames
                      for it in self.inferencer.prepare(f)[1]]
        self.task_options = self.task.options()

    def forward_all(self, items=None) -> list:
        items = self.items if items is None else items
        bs = self.args.batch_size
        out = []
        with torch.no_grad():
            for start in range(0, len(items), bs):
                out += self.inferencer.forward(items[start:start + bs])
        return out

    def timed(self, fn):
        """(seconds, result) of ``fn`` run in a fresh thread.

        Every variant runs in a thread of its own, as the pipeline's network
        does: with two busy processes beside it on the 2-core CPU, the same
        forward measured 1.2-1.5x slower in the main thread than in a fresh
        thread (equal on the idle machine), which would otherwise favour the
        pipeline.
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
                                             self.task_options)

    @staticmethod
    def _renamed(frame, index: int) -> Frame:
        # Unique names per repeat (the layout refuses to overwrite).
        return Frame(f'r{index}_{osp.basename(frame.name)}', frame.image,
                     stem=f'r{index}_{frame.stem}')

    def _draw(self, frame, result):
        return self.task.visualize(frame, result, self.model.dataset_meta,
                                   self.task_options)

    def pipeline(self, out_dir: str) -> list:
        """As tools/infer.py: the frame pipeline, then drawing + encoding on the
        same workers, files written in order."""
        layout, writer = self._writer(out_dir)
        workers = self.args.workers or default_workers()
        passes = Passes(self.args.input, self.args.repeat)
        frames = ((self._renamed(frame, i), result) for i, (frame, result)
                  in enumerate(self.inferencer.iter_frames(
                      reader=passes, workers=workers, overlap=True)))
        results = []
        for item in render_frames(frames, self._draw, workers):
            writer.write(item.frame, item.result)
            if item.image is not None:
                write_image(layout.visualization_path(item.frame),
                            item.image, item.encoded)
            results.append(item.result)
        return results

    def serial(self, out_dir: str) -> list:
        layout, writer = self._writer(out_dir)
        results = []
        passes = Passes(self.args.input, self.args.repeat)
        for index, frame in enumerate(passes):
            result = self.serial_inferencer.predict([frame])[0]
            frame = self._renamed(frame, index)
            writer.write(frame, result)
            vis = self._draw(frame, result)
            if vis is not None:
                write_image(layout.visualization_path(frame), vis)
            results.append(result)
        return results


def _rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def _stack(outputs) -> torch.Tensor:
    """The (first) tensor of every item's forward output, stacked."""
    def tensor(output):
        return output if isinstance(output, torch.Tensor) else tensor(
            output[0])

    return torch.stack([tensor(o) for o in outputs]).float()


def _kpt_shift(bench, ref_out, low_out) -> str:
    inferencer = bench.inferencer
    shifts = []
    pos = 0
    for frame in bench.frames[:len(bench.frames) // bench.args.repeat]:
        boxes, items = inferencer.prepare(frame)
        n = len(items)
        a = inferencer.finish(frame, boxes, ref_out[pos:pos + n])
        b = inferencer.finish(frame, boxes, low_out[pos:pos + n])
        pos += n
        shifts.append(np.linalg.norm(a.keypoints - b.keypoints, axis=-1))
    shift = np.concatenate([s.ravel() for s in shifts])
    return (f'keypoint shift median {np.median(shift):.3f} px, 90th '
            f'percentile {np.percentile(shift, 90):.3f} px, max '
            f'{shift.max():.2f} px')


def _rotated(seq: list, shift: int) -> list:
    shift %= len(seq)
    return seq[shift:] + seq[:shift]


def _ratios(numerators: List[float], denominators: List[float]) -> str:
    """Median of the per-round ratios, and each round's."""
    ratios = [a / b for a, b in zip(numerators, denominators)]
    return (f'{statistics.median(ratios):.2f} (per round: '
            f'{", ".join(f"{r:.2f}" for r in ratios)})')


class Modes:
    """Switch the bench model between eager / compiled and fp32 / bf16."""

    def __init__(self, model: torch.nn.Module, compile_: bool) -> None:
        self.model = model
        self.eager = {name: getattr(model, name).forward
                      for name in COMPILED_PARTS
                      if isinstance(getattr(model, name, None),
                                    torch.nn.Module)}
        self.compiled = {}
        if compile_:
            compile_model(model)
            self.compiled = {n: getattr(model, n).forward for n in self.eager}

    def set(self, compiled: bool, dtype: str) -> None:
        forwards = self.compiled if compiled else self.eager
        for name, forward in forwards.items():
            getattr(self.model, name).forward = forward
        set_inference_dtype(self.model, dtype, allow_emulated=True)


def measure_model_only(bench: Bench, args, peaks: dict, flops: float
                       ) -> Dict[Tuple[str, str], List[float]]:
    """Time the network in every mode, in interleaved rounds; print speed,
    GEMM-peak fractions, per-round speed ratios and the accuracy cost."""
    n_img, n_items = len(bench.frames), len(bench.items)
    modes = Modes(bench.model, args.compile)
    keys = [('eager', d) for d in args.dtypes]
    if args.compile:
        keys += [('compiled', d) for d in args.dtypes
                 if d in args.compile_dtypes]
    warm, times, outputs = {}, {k: [] for k in keys}, {}
    for key in keys:  # warm-up: a full and the last, shorter batch compile
        modes.set(key[0] == 'compiled', key[1])
        start = time.perf_counter()
        bench.forward_all(bench.items[:args.batch_size])
        if n_items % args.batch_size:
            bench.forward_all(bench.items[:n_items % args.batch_size])
        warm[key] = time.perf_counter() - start
    for rnd in range(args.rounds):  # the order rotates every round
        for key in _rotated(keys, rnd):
            modes.set(key[0] == 'compiled', key[1])
            seconds, out = bench.timed(bench.forward_all)
            times[key].append(seconds)
            outputs.setdefault(key, out)
    modes.set(False, 'fp32')
    # The peaks again after the model ran, best of both: a peak measured in
    # a busy moment would inflate the fractions.
    for d in args.dtypes:
        peaks[d] = max(peaks[d], gemm_peak(check_dtype(d, args.device, True),
                                           GEMM_SIZES[d](args), args.device))
        print(f'GEMM peak {d}, best of two: {peaks[d]:.1f} GFLOP/s')
    ref = keys[0]
    for key in keys:
        best = min(times[key])
        gflops = flops / best / 1e9
        line = (f'model-only {key[0]:8s} {key[1]}: {n_img / best:7.2f} img/s '
                f'({n_items / best:7.2f} items/s)  {gflops:7.1f} GFLOP/s = '
                f'{100 * gflops / peaks[key[1]]:5.1f}% of the {key[1]} GEMM '
                f'peak (warm-up {warm[key]:.1f} s)')
        if key != ref:
            line += (f'\n    speed vs {ref[0]} {ref[1]}: '
                     f'{_ratios(times[ref], times[key])}')
        print(line)
    print(f'peak memory after model-only runs {_peak_mb(args.device):.0f} MB')
    ref_out = _stack(outputs[ref])
    for key in keys[1:]:
        low = _stack(outputs[key])
        line = (f'{key[0]} {key[1]} vs {ref[0]} {ref[1]} outputs: relative '
                f'L2 {_rel_l2(low, ref_out):.2e}, max abs '
                f'{(low - ref_out).abs().max().item():.2e}')
        if bench.model.task == 'pose':
            line += ', ' + _kpt_shift(bench, outputs[ref], outputs[key])
        print(line)
    return times


def measure_end_to_end(bench: Bench, args) -> None:
    """Our pipeline, the serial loop and model-only (eager fp32), timed in
    interleaved rounds; the ratios are taken within each round."""
    n_img = len(bench.frames)
    times = dict(pipeline=[], serial=[], model=[])
    with tempfile.TemporaryDirectory() as tmp:
        runs = dict(
            pipeline=lambda r: bench.pipeline(osp.join(tmp, f'p{r}')),
            serial=lambda r: bench.serial(osp.join(tmp, f's{r}')),
            model=lambda r: bench.forward_all())
        for rnd in range(args.rounds):
            for name in _rotated(list(runs), rnd):
                times[name].append(
                    bench.timed(lambda n=name, r=rnd: runs[n](r))[0])
        written = sum(len(files) for _, _, files in os.walk(tmp))
    print('  rounds (s): ' + '  '.join(
        f'{k} {", ".join(f"{t:.2f}" for t in v)}' for k, v in times.items()))
    print(f'end-to-end eager fp32 ({written} files written), best round:')
    for name, label in (('model', 'model-only'), ('pipeline', 'pipeline'),
                        ('serial', 'serial')):
        print(f'  {label:10s} {n_img / min(times[name]):7.2f} img/s')
    print(f'  pipeline / model-only throughput: '
          f'{_ratios(times["model"], times["pipeline"])}')
    print(f'  pipeline / serial throughput:     '
          f'{_ratios(times["serial"], times["pipeline"])}')
    print(f'peak memory {_peak_mb(args.device):.0f} MB')


#: GEMM size measured per dtype (emulated bf16 is slow: at most 1024^3).
GEMM_SIZES = dict(fp32=lambda a: a.gemm_size,
                  bf16=lambda a: min(a.gemm_size, 1024))


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
          f'{n_items} network items, batch {args.batch_size}, '
          f'{args.rounds} interleaved rounds')
    flops = bench.flops()
    peaks = {d: gemm_peak(check_dtype(d, args.device, True),
                          GEMM_SIZES[d](args), args.device)
             for d in args.dtypes}
    for d, p in peaks.items():
        print(f'GEMM peak {d} ({GEMM_SIZES[d](args)}^3): {p:.1f} GFLOP/s')
    if 'bf16' in peaks and bf16_problem(args.device):
        print(f'note: {bf16_problem(args.device)}; fp32 stays the default')
    if 'fp32' in peaks and 'bf16' in peaks:
        print(f'bf16 GEMM / fp32 GEMM: {peaks["bf16"] / peaks["fp32"]:.2f}x')
    print(f'SDPA backend: {sdpa_backend(bench.forward_all, bench.items[:1])}')
    measure_model_only(bench, args, peaks, flops)
    if not args.skip_e2e:
        measure_end_to_end(bench, args)


if __name__ == '__main__':
    main()
