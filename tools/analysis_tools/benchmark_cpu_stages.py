"""Throughput of the CPU stages around the network against the number of
``--workers`` threads: the read stage (decode + prepare) and the drawing
stage (draw + encode the visualization).

    python tools/analysis_tools/benchmark_cpu_stages.py \\
        configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py \\
        --upscale 4032 3024 --workers 1 2

The bundled COCO photos (or ``--input``) are written as JPEGs of
``--upscale`` W H (phone-photo size) to a temporary folder. For each worker
count, in alternating rounds:

* read: decode them and run the task's ``prepare`` stage (pose: the person
  boxes of the COCO annotations and the 1024x768 top-down crops; seg: the
  resize to the network size);
* draw: the task's visualization of a synthetic result (pose: keypoints
  spread over each box; seg: a label map of blocks of every class) and its
  encoding to the output format, as ``tools/infer.py`` does.

No network runs, so the backbone is shrunk to two blocks.
"""
import argparse
import json
import os
import os.path as osp
import shutil
import sys
import tempfile
import time

import cv2
import numpy as np

sys.path.insert(0, osp.join(osp.dirname(osp.abspath(__file__)), '..', '..'))
sys.path.insert(0, osp.dirname(osp.abspath(__file__)))

from benchmark_inference import _override  # noqa: E402

from sapiens2_mm.apis import BoxFile, FrameReader, init_model  # noqa: E402
from sapiens2_mm.apis.box_sources import coco_person_boxes  # noqa: E402
from sapiens2_mm.apis.frame_pipeline import ordered_map, render_frames  # noqa: E402
from sapiens2_mm.apis.results import PoseResult, SegResult  # noqa: E402
from sapiens2_mm.apis.tasks import get_task  # noqa: E402

TINY_ARCH = ('{"embed_dims": 64, "num_layers": 2, "num_heads": 2, '
             '"feedforward_channels": 128, "num_tokenizer_layers": 0}')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='task config (pose or seg)')
    parser.add_argument('--input', default='tests/data/coco_sample',
                        help='folder of photos (pose boxes: its COCO '
                        'test_coco.json, else whole images)')
    parser.add_argument('--upscale', type=int, nargs=2, metavar=('W', 'H'),
                        help='resize every photo to W x H first')
    parser.add_argument('--copies', type=int, default=3,
                        help='copies of each photo (more frames per round)')
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--rounds', type=int, default=3)
    return parser.parse_args(argv)


def make_photos(src: str, out: str, size, copies: int) -> dict:
    """JPEG copies of ``src``'s photos in ``out``; old name -> new names."""
    names = {}
    for name in sorted(os.listdir(src)):
        if not name.lower().endswith(('.jpg', '.jpeg', '.png')):
            continue
        image = cv2.imread(osp.join(src, name))
        if size:
            image = cv2.resize(image, tuple(size),
                               interpolation=cv2.INTER_CUBIC)
        stem = osp.splitext(name)[0]
        for c in range(copies):
            new = f'{stem}_{c}.jpg'
            cv2.imwrite(osp.join(out, new), image)
            names.setdefault(name, []).append(new)
    return names


def scaled_boxes(src: str, names: dict, size) -> str:
    """A temporary bbox file: the COCO boxes of ``src`` for the renamed
    (and resized) photos."""
    with open(osp.join(src, 'test_coco.json')) as f:
        boxes = coco_person_boxes(json.load(f))
    out = {}
    for old, new_names in names.items():
        rows = boxes.get(old, [])
        if size:
            h, w = cv2.imread(osp.join(src, old)).shape[:2]
            sx, sy = size[0] / w, size[1] / h
            rows = [[x1 * sx, y1 * sy, x2 * sx, y2 * sy]
                    for x1, y1, x2, y2 in rows]
        for new in new_names:
            out[new] = rows
    path = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False)
    json.dump(out, path)
    path.close()
    return path.name


def read_stage(stages, folder: str, workers: int) -> list:
    """Decode and prepare every photo of ``folder``: (frame, context,
    number of items) each."""
    reader = FrameReader(folder)

    def load_and_prepare(job):
        frame = job().frame
        context, items = stages.prepare(frame)
        return frame, context, len(items)

    return list(ordered_map(load_and_prepare, reader.jobs(), workers))


def synthetic_result(task: str, frame, boxes, num_keypoints: int,
                     num_classes: int):
    """A result to draw (its values do not change the drawing's cost)."""
    h, w = frame.image.shape[:2]
    if task == 'pose':
        boxes = np.asarray(boxes, np.float32).reshape(-1, 5)
        rng = np.random.default_rng(0)
        unit = rng.random((len(boxes), num_keypoints, 2), dtype=np.float32)
        size = boxes[:, None, 2:4] - boxes[:, None, 0:2]
        return PoseResult(frame.name, (h, w), boxes[:, :4], boxes[:, 4],
                          boxes[:, None, 0:2] + unit * size,
                          np.ones((len(boxes), num_keypoints), np.float32))
    grid = np.arange(64, dtype=np.uint8).reshape(8, 8) % num_classes
    labels = cv2.resize(grid, (w, h), interpolation=cv2.INTER_NEAREST)
    return SegResult(frame.name, labels)


def draw_stage(task, model, pairs, workers: int) -> int:
    """Draw and encode every (frame, result); the number of bytes."""
    options = task.options()

    def draw(frame, result):
        return task.visualize(frame, result, model.dataset_meta, options)

    return sum(len(r.encoded) for r in render_frames(pairs, draw, workers))


def main(argv=None) -> dict:
    args = parse_args(argv)
    from sapiens2_mm.utils.config_file import load_config
    cfg = load_config(args.config)
    _override(cfg, TINY_ARCH, None)
    model = init_model(cfg)
    task = get_task(model.task)
    tmp = tempfile.mkdtemp()
    try:
        names = make_photos(args.input, tmp, args.upscale, args.copies)
        kwargs = {}
        coco = osp.join(args.input, 'test_coco.json')
        if model.task == 'pose' and osp.isfile(coco):
            box_file = scaled_boxes(args.input, names, args.upscale)
            kwargs['boxes'] = BoxFile(box_file)  # read here
            os.remove(box_file)
        stages = task.build_inferencer(model, **kwargs)
        frames = sum(len(v) for v in names.values())
        times = {(stage, w): [] for stage in ('read', 'draw')
                 for w in args.workers}
        prepared = read_stage(stages, tmp, 1)
        items = sum(n for _, _, n in prepared)
        meta = model.dataset_meta
        pairs = [(frame, synthetic_result(
            model.task, frame, context, meta.get('num_keypoints', 0),
            len(meta.get('classes', [])) or 1)) for frame, context, _ in
            prepared]
        for _ in range(args.rounds):
            for workers in args.workers:
                start = time.perf_counter()
                read_stage(stages, tmp, workers)
                times['read', workers].append(time.perf_counter() - start)
                start = time.perf_counter()
                draw_stage(task, model, pairs, workers)
                times['draw', workers].append(time.perf_counter() - start)
    finally:
        shutil.rmtree(tmp)
    size = 'x'.join(map(str, args.upscale)) if args.upscale else 'original'
    print(f'{model.task}: {frames} photos ({size}), {items} prepared items, '
          f'{os.cpu_count()} cores, best of {args.rounds} rounds')
    rates = {}
    for stage, what in (('read', 'decode + prepare'),
                        ('draw', 'draw + encode')):
        base = min(times[stage, args.workers[0]])
        for workers in args.workers:
            best = min(times[stage, workers])
            rates[stage, workers] = frames / best
            print(f'  {what:16s} workers {workers}: '
                  f'{rates[stage, workers]:6.2f} photos/s ({base / best:.2f}x '
                  f'{args.workers[0]} worker(s))')
    return rates


if __name__ == '__main__':
    main()
