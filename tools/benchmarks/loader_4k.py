"""Training data loading at 4K against 1K: images per second of one loader
worker, per task, before and after the 4K pipeline changes of issue 27.

    python tools/benchmarks/loader_4k.py [--tasks seg pose] [--rounds 3]
        [--samples 4] [--steps] [--out loader_4k.json]

For every registered task (``sapiens2_mm.apis.task_names``) with a 1B-4K
config, the training split of the bundled sample (the dataset of the task's
tiny 4K config: tests/data/seg_sample, dense_sample, coco_sample) goes
through these pipelines:

* ``1k``: the training pipeline of the task's 1b 1K config
  (``configs/<task>/sapiens2-1b_*_<data>-1024x768.py``);
* ``4k-before``: the 1B-4K config's pipeline with the implementations it
  replaced: dense targets letterboxed at 4096x3072 and then resized to the
  2048x1536 output (``DenseResizePad`` + ``DenseToOutputSize``), the seg
  crop's class count by ``np.unique``, the colour distortions and the
  seg flip of mmseg and mmpose instead of their lookup-table forms
  (``REPLACED``), the normal and
  pointmap targets and the official noise as they were before
  (``PREVIOUS_METHODS``);
* ``4k``: the 1B-4K config's pipeline as shipped;
* ``4k-options``: the shipped pipeline with the named options that depart
  from the official pipeline turned on (docs/4k.md gives their
  differences): ``SegRandomGaussianNoise(generator='pcg64')`` (other random
  numbers, same distribution); for seg, SegRandomResize + SegRandomCrop as
  ``SegRandomResizeCrop(crop_first=True)``; for pose, the colour
  distortion that follows the crop warp moved before it, onto the source
  pixels of the crop (``Sapiens2TopdownCropSource``). Only tasks whose
  pipeline has such a step get this variant.

A worker's cost of one image is the pipeline (``dataset[i]``, with
mmengine's redraw of a dropped sample), the collate (``pseudo_collate``, the
configs' default) and moving the batch's tensors to shared memory, which a
DataLoader worker does before the main process receives the batch (the
4K pose target alone is 308 x 512 x 384 float32 = 242 MB). The variants of a
task run interleaved, one sample each in turn (the order rotates every
round), with the same random seed per sample: on a machine shared with other
work the ratios between variants of one run are what to read, not the
absolute rates. The worker runs OpenCV and torch on one thread, as a
training worker does; its CPU time per image (``time.process_time``) is also
reported: images per CPU second is the rate of a worker on a core of its own
(without waiting for the shared machine's other work, but with its memory
traffic). ``4k-before`` and ``4k`` must give equal batches (checked, every
sample).
"""
import argparse
import contextlib
import glob
import json
import os.path as osp
import random
import sys
import time
from collections import defaultdict

import numpy as np

REPO_DIR = osp.abspath(osp.join(osp.dirname(osp.abspath(__file__)), '..',
                                '..'))
sys.path.insert(0, REPO_DIR)

import cv2  # noqa: E402
import torch  # noqa: E402
from mmengine.config import Config  # noqa: E402
from mmengine.dataset import pseudo_collate  # noqa: E402
from mmengine.structures import BaseDataElement  # noqa: E402

from sapiens2_mm.apis import task_names  # noqa: E402
from sapiens2_mm.registry import DATASETS  # noqa: E402
from sapiens2_mm.utils.setup_env import register_all_modules  # noqa: E402

VARIANTS = ('1k', '4k-before', '4k', '4k-options')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', nargs='+',
                        help='registered task names (default: all with a '
                        '1B-4K config)')
    parser.add_argument('--rounds', type=int, default=3,
                        help='rounds over the samples, variants interleaved')
    parser.add_argument('--samples', type=int, default=4,
                        help='samples per round and variant')
    parser.add_argument('--steps', action='store_true',
                        help='print ms per pipeline step of every variant')
    parser.add_argument('--out', help='write the figures to this JSON file')
    return parser.parse_args(argv)


def _one(pattern: str) -> str:
    found = sorted(glob.glob(osp.join(REPO_DIR, pattern)))
    if len(found) != 1:
        raise SystemExit(f'expected one config {pattern}, found {found}')
    return found[0]


def task_configs(task: str) -> dict:
    """The task's 1B-4K config, the 1b 1K config of the same data and the
    tiny 4K config whose dataset is the bundled sample."""
    four_k = _one(f'configs/{task}/sapiens2-1b-4k_*.py')
    data = osp.basename(four_k).split('_')[-1].rsplit('-', 1)[0]
    return dict(four_k=four_k,
                one_k=_one(f'configs/{task}/sapiens2-1b_*_{data}-1024x768.py'),
                sample=_one(f'configs/{task}/sapiens2-tiny-4k_*.py'))


# Steps of the shipped 4K pipelines and the upstream ones they replaced
# with equal results.
REPLACED = {
    'PhotoMetricDistortionLUT': 'mmseg.PhotoMetricDistortion',
    'PosePhotometricDistortionLUT': 'mmpose.PhotometricDistortion',
    'SegRandomFlipLUT': 'mmseg.RandomFlip',
}


def _upstream(step: dict) -> dict:
    """``step`` with the upstream type it replaced (also inside
    ``RandomApply``)."""
    step = dict(step)
    step['type'] = REPLACED.get(step['type'], step['type'])
    if 'transforms' in step:
        step['transforms'] = [_upstream(s) for s in step['transforms']]
    return step


def _before(pipeline: list) -> list:
    """The 4K pipeline with the replaced implementation of each changed
    step (``PREVIOUS_METHODS`` are patched in :func:`build_dataset`)."""
    out = []
    for step in pipeline:
        step = _upstream(step)
        scale = step.pop('output_scale', 1.0) \
            if step['type'] == 'DenseResizePad' else 1.0
        out.append(step)
        if scale != 1.0:
            out.append(dict(type='DenseToOutputSize', scale=scale))
    return out


def _options(pipeline: list) -> list:
    """The 4K pipeline with the named options on; None without any."""
    types = [s['type'] for s in pipeline]
    out = [dict(s, generator='pcg64') if s['type'] == 'SegRandomGaussianNoise'
           else s for s in pipeline]
    if 'SegRandomResize' in types:
        at = types.index('SegRandomResize')
        resize, crop = pipeline[at], pipeline[at + 1]
        fused = dict(type='SegRandomResizeCrop', height=resize['height'],
                     width=resize['width'], ratio_range=resize['ratio_range'],
                     keep_ratio=resize['keep_ratio'], prob=crop['prob'],
                     cat_max_ratio=crop['cat_max_ratio'], crop_first=True)
        out = out[:at] + [fused] + out[at + 2:]
    types = [s['type'] for s in out]
    if 'Sapiens2TopdownAffine' in types:
        at = types.index('Sapiens2TopdownAffine')
        warp, colour = out[at], out[at + 1]
        if colour['type'] == 'RandomApply':
            crop = dict(type='Sapiens2TopdownCropSource',
                        input_size=warp['input_size'],
                        use_udp=warp.get('use_udp', True))
            out = out[:at] + [crop, colour, warp] + out[at + 2:]
    return out if out != pipeline else None


def _unique_counts(self, crop: np.ndarray) -> np.ndarray:
    """SegRandomCrop's class count before issue 27 (np.unique)."""
    return np.unique(crop[crop != self.ignore_index], return_counts=True)[1]


# The implementations that shipped steps replaced with equal results, run by
# ``4k-before`` and used by the tests as the reference
# (tests/test_datasets/test_dense_targets.py, test_seg_noise.py).


def previous_normal_target(self, results: dict) -> dict:
    """NormalGenerateTarget.transform before issue 27 item 4 (whole-map
    np.linalg.norm and np.where)."""
    normal = results.get('gt_normal')
    if normal is None:
        return results
    mask = results['gt_mask']
    norm = np.linalg.norm(normal, axis=2, keepdims=True)
    ok = mask[..., None] & (norm > 1e-6)
    out = np.where(ok, normal / np.where(norm > 1e-6, norm, 1.0), normal)
    if self.background_value is not None:
        out = np.where(mask[..., None], out, self.background_value)
    results['gt_normal'] = out.astype(np.float32)
    results['gt_mask'] = mask & ok[..., 0]
    return results


def previous_pointmap_target(self, results: dict) -> dict:
    """PointmapGenerateTarget.transform before issue 27 item 4 (per-pixel
    float64 grids)."""
    depth = results.get('gt_depth')
    if depth is None:
        return results
    K_gt = results.get('gt_cam_K', results['cam_K'])
    mask = results['gt_mask']
    h, w = depth.shape
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    fx, fy, cx, cy = K_gt[0, 0], K_gt[1, 1], K_gt[0, 2], K_gt[1, 2]
    skew = K_gt[0, 1]
    y = (v - cy) / fy
    x = (u - cx - skew * y) / fx
    scale = self.canonical_focal_length / float(results['cam_K'][0, 0])
    points = np.stack([x * depth, y * depth, depth.astype(np.float64)],
                      axis=-1) * scale
    points[~mask] = 0.0
    results['gt_pointmap'] = points.astype(np.float32)
    results['gt_depth'] = np.where(mask, depth, 0.0).astype(np.float32)
    results['canonical_scale'] = scale
    results['gt_mean_depth'] = float(points[mask, 2].mean()) \
        if mask.any() else 0.0
    return results


def previous_gaussian_noise(self, results: dict) -> dict:
    """SegRandomGaussianNoise.transform before issue 27 item 4 (the
    official draw of the whole image at once)."""
    if np.random.rand() < self.prob:
        img = results['img']
        std = np.sqrt(np.random.uniform(*self.var_range))
        if self.generator == 'official':
            noise = np.random.normal(0.0, std, img.shape).astype(np.float32)
        else:
            rng = np.random.default_rng(np.random.randint(2**31))
            noise = rng.standard_normal(img.shape, dtype=np.float32)
            noise *= np.float32(std)
        noise += img
        results['img'] = np.clip(noise, 0, 255, out=noise).astype(img.dtype)
    return results


def previous_solarize(self, results: dict) -> dict:
    """RandomSolarize.transform before issue 27 item 4 (the formula on every
    pixel, now its ``solarize`` method)."""
    if np.random.rand() >= self.prob:
        return results
    results['img'] = self.solarize(results['img'])
    return results


# step type -> (method, the previous implementation) patched in 4k-before
PREVIOUS_METHODS = {
    'RandomSolarize': ('transform', previous_solarize),
    'SegRandomCrop': ('_class_counts', _unique_counts),
    'NormalGenerateTarget': ('transform', previous_normal_target),
    'PointmapGenerateTarget': ('transform', previous_pointmap_target),
    'SegRandomGaussianNoise': ('transform', previous_gaussian_noise),
}


class _Timed:
    """A pipeline step that adds its run time to ``totals[name]``."""

    def __init__(self, step, name: str, totals: dict) -> None:
        self.step, self.name, self.totals = step, name, totals

    def __call__(self, results):
        start = time.perf_counter()
        out = self.step(results)
        self.totals[self.name] += time.perf_counter() - start
        return out


def build_dataset(configs: dict, variant: str, step_totals: dict):
    """The sample's training dataset with the ``variant``'s pipeline, each
    step timed into ``step_totals``; None when the variant does not apply
    to the task."""
    pipeline_cfg = Config.fromfile(
        configs['one_k' if variant == '1k' else 'four_k']
    ).train_dataloader.dataset.pipeline
    if variant == '4k-before':
        pipeline_cfg = _before(pipeline_cfg)
    elif variant == '4k-options':
        pipeline_cfg = _options(pipeline_cfg)
        if pipeline_cfg is None:
            return None
    dataset_cfg = Config.fromfile(configs['sample']).train_dataloader.dataset
    dataset_cfg.pipeline = pipeline_cfg
    dataset = DATASETS.build(dataset_cfg)
    steps = dataset.pipeline.transforms
    for i, (step, cfg) in enumerate(zip(steps, pipeline_cfg)):
        if variant == '4k-before' and cfg['type'] in PREVIOUS_METHODS:
            method, previous = PREVIOUS_METHODS[cfg['type']]
            setattr(step, method, previous.__get__(step))
        steps[i] = _Timed(step, f'{i:02d} {cfg["type"]}', step_totals)
    return dataset


def _share(value):
    """Move every tensor of a collated batch to shared memory, as the
    DataLoader worker's queue does."""
    if isinstance(value, torch.Tensor):
        value.share_memory_()
    elif isinstance(value, BaseDataElement):
        _share(value.to_dict())
    elif isinstance(value, dict):
        for item in value.values():
            _share(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _share(item)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, BaseDataElement):
        return _same(a.to_dict(), b.to_dict())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def worker_image(dataset, index: int, seed: int):
    """(wall seconds, CPU seconds, batch) of one image through the worker's
    work."""
    np.random.seed(seed)
    random.seed(seed)
    start, start_cpu = time.perf_counter(), time.process_time()
    batch = pseudo_collate([dataset[index]])
    _share(batch)
    return (time.perf_counter() - start, time.process_time() - start_cpu,
            batch)


@contextlib.contextmanager
def worker_threads():
    """One thread for OpenCV and torch, as in a training loader worker
    (the configs' ``env_cfg.mp_cfg.opencv_num_threads=0``; torch's
    DataLoader sets one thread per worker), restored afterwards."""
    cv2_threads, torch_threads = cv2.getNumThreads(), torch.get_num_threads()
    cv2.setNumThreads(0)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        cv2.setNumThreads(cv2_threads)
        torch.set_num_threads(torch_threads)


def bench_task(task: str, args) -> dict:
    configs = task_configs(task)
    steps = {v: defaultdict(float) for v in VARIANTS}
    datasets = {v: build_dataset(configs, v, steps[v]) for v in VARIANTS}
    datasets = {v: d for v, d in datasets.items() if d is not None}
    names = list(datasets)
    seconds = dict.fromkeys(names, 0.0)
    cpu_seconds = dict.fromkeys(names, 0.0)
    count = 0
    equal = True
    for round_ in range(args.rounds):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for i in range(args.samples):
            seed = 1000 * round_ + i
            batches = {}
            for name in order:
                dataset = datasets[name]
                took, took_cpu, batches[name] = worker_image(
                    dataset, seed % len(dataset), seed)
                seconds[name] += took
                cpu_seconds[name] += took_cpu
            count += 1
            equal &= _same(batches['4k-before'], batches['4k'])
    rate = {name: count / seconds[name] for name in names}
    row = dict(task=task, images=count, equal_before_after=equal,
               images_per_s=rate,
               ms_per_image={n: 1e3 * seconds[n] / count for n in names},
               cpu_ms_per_image={n: 1e3 * cpu_seconds[n] / count
                                 for n in names},
               images_per_cpu_s={n: count / cpu_seconds[n] for n in names},
               vs_1k={n: rate[n] / rate['1k'] for n in names},
               after_vs_before=rate['4k'] / rate['4k-before'],
               steps_ms={n: {k: 1e3 * v / count
                             for k, v in sorted(steps[n].items())}
                         for n in names})
    if '4k-options' in rate:
        row['options_vs_4k'] = rate['4k-options'] / rate['4k']
    return row


def main(argv=None) -> list:
    args = parse_args(argv)
    register_all_modules()
    tasks = args.tasks or [t for t in task_names()
                           if glob.glob(osp.join(REPO_DIR, 'configs', t,
                                                 'sapiens2-1b-4k_*.py'))]
    unknown = set(tasks) - set(task_names())
    if unknown:
        raise SystemExit(f'--tasks {sorted(unknown)}: not registered; '
                         f'registered tasks: {task_names()}')
    print(f'{args.rounds} rounds x {args.samples} samples per variant, '
          'interleaved; images/s of one worker (pipeline + collate + '
          'shared memory; one OpenCV / torch thread) by the wall clock, and '
          'by its CPU time (the rate on a core of its own)')
    rows = []
    with worker_threads():
        for task in tasks:
            rows.append(bench_task(task, args))
            _print_row(rows[-1], args.steps)
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(dict(rounds=args.rounds, samples=args.samples,
                           results=rows), f, indent=1)
    return rows


def _print_row(row: dict, steps: bool) -> None:
    task = row['task']
    for name, rate in row['images_per_s'].items():
        print(f'{task:9s} {name:14s} {row["ms_per_image"][name]:9.1f} '
              f'ms/image {rate:7.2f} images/s  x{row["vs_1k"][name]:.3f}'
              f' of 1K; CPU {row["cpu_ms_per_image"][name]:7.1f} ms/image '
              f'{row["images_per_cpu_s"][name]:6.2f} images/CPU-s')
    extra = ''
    if 'options_vs_4k' in row:
        extra = f'; options x{row["options_vs_4k"]:.3f} of 4k'
    print(f'{task:9s} 4k after / before x{row["after_vs_before"]:.3f}, '
          f'batches equal: {row["equal_before_after"]}{extra}')
    if steps:
        for name, times in row['steps_ms'].items():
            print(f'  {name}: ' + ', '.join(
                f'{k[3:]} {v:.0f}' for k, v in times.items()))


if __name__ == '__main__':
    main()
