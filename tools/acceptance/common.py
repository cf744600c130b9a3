"""Helpers of the GPU acceptance stages (tools/gpu_acceptance.py).

A stage runs in a process of its own and reports each measurement as soon as
it has it (:class:`Rows`, one JSON line per row in ``OUT/rows/STAGE.jsonl``),
so that a stage killed at its time cap still leaves what it finished.
"""
import json
import os
import os.path as osp
import time
from typing import Callable, Dict, Optional

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DATA = osp.join(ROOT, 'tests', 'data')
COCO = osp.join(DATA, 'coco_sample')
TASKS = ('pose', 'seg', 'normal', 'pointmap', 'albedo')
#: task -> the 0.4b and 1b configs measured at 1024x768 (their own batch)
CONFIGS = {
    '0.4b': dict(
        pose='configs/pose/sapiens2-0.4b_8xb6-10k_coco-1024x768.py',
        seg='configs/seg/sapiens2-0.4b_8xb12-20k_seg29-1024x768.py',
        normal='configs/normal/sapiens2-0.4b_8xb20-20k_normal-1024x768.py',
        pointmap='configs/pointmap/sapiens2-0.4b_8xb8-20k_pointmap-1024x768.py',
        albedo='configs/albedo/sapiens2-0.4b_16xb10-20k_albedo-1024x768.py'),
    '1b': dict(
        pose='configs/pose/sapiens2-1b_8xb7-20k_coco-1024x768.py',
        seg='configs/seg/sapiens2-1b_8xb8-20k_seg29-1024x768.py',
        normal='configs/normal/sapiens2-1b_8xb7-40k_normal-1024x768.py',
        pointmap='configs/pointmap/sapiens2-1b_8xb3-40k_pointmap-1024x768.py',
        albedo='configs/albedo/sapiens2-1b_8xb7-40k_albedo-1024x768.py'),
}
#: task -> the tiny CPU config of --dry-run (128x96)
TINY = dict(
    pose='configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py',
    seg='configs/seg/sapiens2-tiny_1xb2-30_seg29sample-128x96.py',
    normal='configs/normal/sapiens2-tiny_1xb2-30_densesample-128x96.py',
    pointmap='configs/pointmap/sapiens2-tiny_1xb2-30_densesample-128x96.py',
    albedo='configs/albedo/sapiens2-tiny_1xb2-30_densesample-128x96.py')
#: where a fetched snapshot of the official code is carried (git-ignored):
#: git clone --depth 1 https://github.com/facebookresearch/sapiens2 .official/sapiens2
OFFICIAL = osp.join(ROOT, '.official', 'sapiens2')


class Rows:
    """Append one stage's rows to ``OUT/rows/STAGE.jsonl`` as they come."""

    def __init__(self, out_dir: str, stage: str):
        folder = osp.join(out_dir, 'rows')
        os.makedirs(folder, exist_ok=True)
        self.path = osp.join(folder, f'{stage}.jsonl')

    def add(self, **row) -> dict:
        with open(self.path, 'a') as f:
            f.write(json.dumps(row) + '\n')
            f.flush()
            os.fsync(f.fileno())
        print('ROW ' + json.dumps(row), flush=True)
        return row


def read_rows(out_dir: str, stage: str) -> list:
    path = osp.join(out_dir, 'rows', f'{stage}.jsonl')
    if not osp.isfile(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def device(dry_run: bool):
    import torch
    return torch.device('cpu' if dry_run else 'cuda')


def synchronize(dev) -> None:
    import torch
    if dev.type == 'cuda':
        torch.cuda.synchronize(dev)


def timed(step: Callable, dev, warmup: int, repeat: int) -> float:
    """Seconds per call of ``step`` after ``warmup`` calls (synchronized)."""
    for _ in range(warmup):
        step()
    synchronize(dev)
    start = time.perf_counter()
    for _ in range(repeat):
        step()
    synchronize(dev)
    return (time.perf_counter() - start) / repeat


def peak_mib(dev) -> Optional[float]:
    import torch
    if dev.type != 'cuda':
        return None
    return round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)


def reset_peak(dev) -> None:
    import torch
    if dev.type == 'cuda':
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)


def sample_data(task: str) -> Dict:
    """The train dataset of ``task`` pointed at the bundled sample."""
    if task == 'pose':
        return dict(data_root=COCO + '/',
                    ann_file=osp.join(COCO, 'test_coco.json'),
                    data_prefix=dict(img=''))
    if task == 'seg':
        return dict(data_root=osp.join(DATA, 'seg_sample') + '/',
                    data_prefix=dict(img_path='images',
                                     seg_map_path='labels'))
    return dict(data_root=osp.join(DATA, 'dense_sample') + '/')


def load_config(task: str, size: str, dry_run: bool):
    """The measured config: no pretrain file, train set on the sample."""
    from mmengine.config import Config
    path = TINY[task] if dry_run else CONFIGS[size][task]
    cfg = Config.fromfile(osp.join(ROOT, path))
    cfg.model.backbone.init_cfg = None
    dataset = cfg.train_dataloader.dataset
    dataset.update(sample_data(task))
    dataset.pop('indices', None)
    return cfg, path


def one_batch(cfg, batch: int) -> Dict:
    """One sample through the config's train pipeline, ``batch`` times."""
    from mmengine.dataset import pseudo_collate

    from sapiens2_mm.registry import DATASETS
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    item = None
    for index in range(len(dataset)):
        item = dataset[index]
        if item is not None:
            break
    return pseudo_collate([item] * batch)
