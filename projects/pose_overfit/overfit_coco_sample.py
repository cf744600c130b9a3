"""Overfit the tiny pose config on the bundled COCO sample and report COCO AP.

Trains ``configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py`` with the
mmengine Runner on CPU, then evaluates on the same 12 labelled people with
mmpose's CocoMetric (flip test on). A high AP shows that the codec, transforms,
head, flip test, decoding, crop->image mapping and metric agree.

Usage (from the repository root)::

    python projects/pose_overfit/overfit_coco_sample.py [--iters 300]
"""
import argparse
import os.path as osp
import tempfile
import time

from mmengine.config import Config
from mmengine.runner import Runner

from sapiens2_mm.utils import register_all_modules

CONFIG = 'configs/pose/sapiens2-tiny_1xb12-300_cocosample-128x96.py'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--iters', type=int, default=300)
    parser.add_argument('--work-dir', default=None)
    args = parser.parse_args()
    register_all_modules()
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = args.work_dir or osp.join(tempfile.mkdtemp(), 'pose_overfit')
    cfg.train_cfg.max_iters = args.iters
    cfg.train_cfg.val_interval = args.iters
    cfg.param_scheduler[1].end = args.iters
    cfg.default_hooks.checkpoint.interval = args.iters
    start = time.time()
    runner = Runner.from_cfg(cfg)
    runner.train()
    metrics = runner.val_loop.run()
    print(f'iterations: {args.iters}, wall time: {time.time() - start:.0f} s')
    print(f"coco/AP: {metrics['coco/AP']:.4f}  coco/AR: {metrics['coco/AR']:.4f}")


if __name__ == '__main__':
    main()
