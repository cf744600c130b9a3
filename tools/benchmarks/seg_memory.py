"""Peak memory of seg inference on a large photo: full-resolution logits
(mmseg's ``postprocess_result``, int64 labels: the earlier inferencer) against
the banded resize + argmax of :class:`sapiens2_mm.apis.SegInferencer` (uint8).

    python tools/benchmarks/seg_memory.py [--size 8000x6000]
        [--config configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py]

Each way runs in a fresh process. After the model is built and the photo is
in memory, the process's peak-RSS counter is reset (``/proc/self/clear_refs``)
so the figure printed is the peak *above* the model's and the photo's own
footprint. Both label maps are compared at the end. A benchmark, not a test:
it needs about 8 GB free for the full-resolution way at 8000x6000.
"""
import argparse
import os
import os.path as osp
import subprocess
import sys
import tempfile

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEFAULT_CONFIG = osp.join(
    REPO, 'configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
PHOTO = osp.join(REPO, 'tests/data/coco_sample/000000040083.jpg')


def _rss_kb(field: str) -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError(f'{field} not in /proc/self/status')


def _child(way: str, config: str, size: tuple, out: str) -> None:
    import cv2
    import numpy as np
    import torch

    from sapiens2_mm.apis import SegInferencer, init_model
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = init_model(config)
    width, height = size
    image = cv2.resize(cv2.imread(PHOTO), (width, height),
                       interpolation=cv2.INTER_CUBIC)
    inferencer = SegInferencer(model, batch_size=1)
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # reset VmHWM (peak RSS) to the current RSS
    base = _rss_kb('VmRSS')
    if way == 'after':
        labels = inferencer([image])[0].label_map
    else:
        from mmengine.dataset import pseudo_collate
        data = inferencer.pack(
            type('F', (), dict(image=image, name='big.jpg'))())
        with torch.no_grad():
            sample = model.test_step(pseudo_collate([data]))[0]
        labels = sample.seg_logits.data.argmax(0).cpu().numpy().astype(
            np.int64)
    peak = _rss_kb('VmHWM')
    np.save(out, labels)
    print(f'{way}: baseline RSS {base / 2**20:.2f} GiB (model + photo), peak '
          f'{peak / 2**20:.2f} GiB, above baseline '
          f'{(peak - base) / 2**20:.2f} GiB; label map {labels.dtype}, '
          f'{labels.nbytes / 2**20:.0f} MiB')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size', default='8000x6000', help='WIDTHxHEIGHT')
    parser.add_argument('--config', default=DEFAULT_CONFIG)
    parser.add_argument('--child', choices=['before', 'after'],
                        help=argparse.SUPPRESS)
    parser.add_argument('--out', help=argparse.SUPPRESS)
    parser.add_argument('--skip-before', action='store_true',
                        help='only measure the banded way')
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.lower().split('x'))
    if args.child:
        _child(args.child, args.config, size, args.out)
        return
    import numpy as np
    print(f'photo {size[0]}x{size[1]}, config {osp.relpath(args.config, REPO)}')
    ways = ['after'] if args.skip_before else ['after', 'before']
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for way in ways:
            files[way] = osp.join(tmp, f'{way}.npy')
            env = dict(os.environ, PYTHONPATH=REPO)
            subprocess.run([sys.executable, __file__, '--child', way,
                            '--config', args.config, '--size', args.size,
                            '--out', files[way]], check=True, env=env)
        if len(files) == 2:
            a, b = (np.load(files[w]) for w in ways)
            print(f'label maps equal on {100 * (a == b).mean():.4f} % of the '
                  'pixels')


if __name__ == '__main__':
    main()
