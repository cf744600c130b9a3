"""Plot loss / metric curves and training speed from mmengine scalar logs.

Usage::

    python tools/analysis_tools/analyze_logs.py plot_curve LOG [LOG ...]
        [--keys loss mIoU] [--legend a b] [--title T] [--out curves.png]
    python tools/analysis_tools/analyze_logs.py cal_train_time LOG [LOG ...]

LOG is a ``vis_data/scalars.json`` written by mmengine's LocalVisBackend, or a
work dir: all its runs (the timestamped folders of the first run and of every
``--resume``) are read oldest first and joined into one curve; where a resumed
run repeats iterations that an earlier run had logged past its checkpoint, the
later run's values are kept. Training entries are plotted against their
iteration. Validation entries are plotted against the iteration after which
they were logged (mmengine stamps iteration-based validation with the epoch,
which is always 0 there).
"""
import argparse
import glob
import json
import os.path as osp
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

import numpy as np

Series = Dict[str, Tuple[List[int], List[float]]]


def find_scalars(path: str) -> str:
    """``path`` itself if it is a file, else the latest run's scalars.json."""
    if osp.isfile(path):
        return path
    found = sorted(glob.glob(osp.join(path, '*', 'vis_data', 'scalars.json')))
    if not found:
        found = sorted(glob.glob(osp.join(path, 'vis_data', 'scalars.json')))
    if not found:
        raise FileNotFoundError(
            f'No scalars.json in {path!r}: pass a vis_data/scalars.json file or '
            'a work dir of tools/train.py.')
    return found[-1]


def find_all_scalars(path: str) -> List[str]:
    """``[path]`` for a file, else every run's scalars.json, oldest first.

    Run folders are named by their start time (``YYYYMMDD_HHMMSS``), so their
    sorted order is the order in which the runs were made.
    """
    if osp.isfile(path):
        return [path]
    find_scalars(path)  # raises the error message when there is none
    found = sorted(glob.glob(osp.join(path, '*', 'vis_data', 'scalars.json')))
    return found or [osp.join(path, 'vis_data', 'scalars.json')]


def _read_entries(path: str) -> List[dict]:
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f'{path}:{number} is not JSON ({err})') from err
    return entries


def load_series(path: str) -> Series:
    """``{key: (steps, values)}`` of every numeric key, all runs joined.

    A run that starts at iteration ``s`` (a resume) replaces what earlier runs
    logged at steps >= ``s``.
    """
    points: Dict[str, List[Tuple[int, float]]] = defaultdict(list)
    last_iter = 0
    for file in find_all_scalars(path):
        entries = _read_entries(file)
        starts = [e['iter'] for e in entries if 'iter' in e]
        if starts:  # drop what this run redoes
            for key in points:
                points[key] = [p for p in points[key] if p[0] < starts[0]]
        for entry in entries:
            if 'iter' in entry:  # training entry
                last_iter = step = entry['iter']
            else:  # validation: after the last logged training iteration
                step = last_iter
            for key, value in entry.items():
                if key in ('iter', 'step', 'epoch') or not isinstance(
                        value, (int, float)):
                    continue
                points[key].append((step, float(value)))
    series: Series = {}
    for key, pairs in points.items():
        if pairs:
            series[key] = ([p[0] for p in pairs], [p[1] for p in pairs])
    return series


def plot_curve(logs: List[str], keys: List[str], out: str, title: str = '',
               legend: List[str] = None) -> str:
    """Plot ``keys`` of each log in one figure (one subplot per key)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    all_series = [load_series(log) for log in logs]
    legend = legend or [
        osp.basename(osp.normpath(log)) if osp.isdir(log) else
        osp.basename(osp.dirname(osp.dirname(log))) or log for log in logs]
    if len(legend) != len(logs):
        raise ValueError(f'--legend needs {len(logs)} names, got {legend}')
    for key in keys:
        if not any(key in s for s in all_series):
            known = sorted(set().union(*all_series))
            raise KeyError(f'No log has the key {key!r}; available: {known}')
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 3 * len(keys)),
                             squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        for name, series in zip(legend, all_series):
            if key in series:
                steps, values = series[key]
                ax.plot(steps, values, marker='o' if len(steps) < 20 else None,
                        label=name)
        ax.set_xlabel('iteration')
        ax.set_ylabel(key)
        ax.legend()
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def cal_train_time(log: str) -> Dict[str, float]:
    """Mean / slowest / fastest seconds per training iteration."""
    series = load_series(log)
    if 'time' not in series:
        raise KeyError(f'{log} has no "time" entries (no training iterations)')
    times = np.asarray(series['time'][1])
    return dict(mean=float(times.mean()), slowest=float(times.max()),
                fastest=float(times.min()), std=float(times.std()))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Analyse training logs')
    sub = parser.add_subparsers(dest='task', required=True)
    plot = sub.add_parser('plot_curve', help='plot curves to an image')
    plot.add_argument('logs', nargs='+', help='scalars.json files or work dirs')
    plot.add_argument('--keys', nargs='+', default=['loss'])
    plot.add_argument('--legend', nargs='+')
    plot.add_argument('--title', default='')
    plot.add_argument('--out', default='curves.png')
    speed = sub.add_parser('cal_train_time', help='seconds per iteration')
    speed.add_argument('logs', nargs='+')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from sapiens2_mm.utils.output_paths import OutputPathError, check_output_file
    try:
        if args.task == 'plot_curve':
            check_output_file(args.out, inputs=[
                p for p in args.logs if osp.isfile(p)], what='--out image')
            out = plot_curve(args.logs, args.keys, args.out, args.title,
                             args.legend)
            print(f'Saved {out}')
        else:
            for log in args.logs:
                stats = cal_train_time(log)
                print(f'{log}: {stats["mean"]:.4f} s/iter on average, slowest '
                      f'{stats["slowest"]:.4f}, fastest {stats["fastest"]:.4f}'
                      f', std {stats["std"]:.4f}')
    except (FileNotFoundError, KeyError, ValueError, OutputPathError) as err:
        sys.exit(f'error: {err}')


if __name__ == '__main__':
    main()
