"""Throughput of the pipeline's read stage (decode + prepare) against the
number of read workers, without the network.

    python tools/analysis_tools/benchmark_reader.py \\
        configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py \\
        --upscale 4032 3024 --workers 1 2

The bundled COCO photos (or ``--input``) are written as JPEGs of
``--upscale`` W H (phone-photo size) to a temporary folder; each worker count
then decodes them and runs the task's ``prepare`` stage (pose: person boxes
of the COCO annotations and the 1024x768 top-down crops; seg: the resize to
the network size), in alternating rounds. The network's size does not
matter here, so the backbone is shrunk to two blocks.
"""
import argparse
import os
import os.path as osp
import shutil
import sys
import tempfile
import time

import cv2

sys.path.insert(0, osp.join(osp.dirname(osp.abspath(__file__)), '..', '..'))
sys.path.insert(0, osp.dirname(osp.abspath(__file__)))

from benchmark_inference import _coco_boxes, _override  # noqa: E402

from sapiens2_mm.apis import BoxFile, FrameReader, init_model  # noqa: E402
from sapiens2_mm.apis.ordered_pool import ordered_map  # noqa: E402
from sapiens2_mm.apis.pipeline_stages import stages_for  # noqa: E402
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
    """The COCO boxes of ``src`` for the renamed (and resized) photos."""
    import json
    with open(_coco_boxes(osp.join(src, 'test_coco.json'))) as f:
        boxes = json.load(f)
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


def read_stage(stages, folder: str, workers: int) -> int:
    """Decode and prepare every photo of ``folder``; the number of items."""
    reader = FrameReader(folder)

    def load_and_prepare(job):
        return stages.prepare(job().frame)[1]

    return sum(len(items) for items in
               ordered_map(load_and_prepare, reader.jobs(), workers))


def main(argv=None) -> dict:
    args = parse_args(argv)
    from sapiens2_mm.apis.init_model import load_config
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
            kwargs['boxes'] = BoxFile(scaled_boxes(args.input, names,
                                                   args.upscale))
        stages = stages_for(task.build_inferencer(model, **kwargs))
        frames = sum(len(v) for v in names.values())
        times = {w: [] for w in args.workers}
        items = 0
        for _ in range(args.rounds):
            for workers in args.workers:
                start = time.perf_counter()
                items = read_stage(stages, tmp, workers)
                times[workers].append(time.perf_counter() - start)
    finally:
        shutil.rmtree(tmp)
    size = 'x'.join(map(str, args.upscale)) if args.upscale else 'original'
    print(f'{model.task}: {frames} photos ({size}), {items} prepared items, '
          f'{os.cpu_count()} cores, best of {args.rounds} rounds')
    base = min(times[args.workers[0]])
    rates = {}
    for workers in args.workers:
        best = min(times[workers])
        rates[workers] = frames / best
        print(f'  read workers {workers}: {rates[workers]:6.2f} photos/s '
              f'({base / best:.2f}x {args.workers[0]} worker(s))')
    return rates


if __name__ == '__main__':
    main()
