"""Model-zoo rows for several models on one test set, with a plot.

Usage::

    python tools/analysis_tools/compare_models.py \\
        CONFIG CHECKPOINT [CONFIG CHECKPOINT ...] --out-dir DIR \\
        [--names A B ...] [--batch-size 4] [--repeat 3] [--rounds 3] \\
        [--device cpu] [--plot-metric KEY]

Configs of any scope (sapiens2_mm, stock mmpose / mmseg). Every model is
tested, as tools/test.py does (strict checkpoint loading), on the first
config's test data with its evaluator, each through its own test pipeline;
a row holds the metrics, the parameters, MACs (what the mmpose / mmseg model
zoos print as "FLOPs") and FLOPs = 2 x MACs at the model's test input size,
and the images per second of the network at one batch size, timed in
interleaved rounds, with the ratio to the first model. What makes rows not
comparable as they stand (input size, flip test, losses, the metric
convention) is printed as warnings. Writes ``compare.md``, ``compare.csv``,
``compare.json`` and ``compare.png`` (metric against GFLOPs and against
images/s) to ``--out-dir``, never over existing files; the test logs go to
``--out-dir/work/<name>``. See docs/baselines.md.
"""
import argparse
import csv
import io
import json
import os.path as osp
import sys
import time
from typing import List, Optional

OUTPUTS = ('compare.md', 'compare.csv', 'compare.json', 'compare.png')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Evaluate models on the first config\'s test set and '
        'print model-zoo rows (metrics, params, MACs/FLOPs, img/s)')
    parser.add_argument('pairs', nargs='+', metavar='CONFIG CHECKPOINT',
                        help='config and checkpoint of each model; the first '
                        'config gives the test data and evaluator')
    parser.add_argument('--out-dir', required=True,
                        help='folder for compare.{md,csv,json,png}')
    parser.add_argument('--names', nargs='+', help='row names (default: '
                        'the config file names)')
    parser.add_argument('--batch-size', type=int, default=4,
                        help='images per timed forward (every model)')
    parser.add_argument('--repeat', type=int, default=3,
                        help='timed batches per model and round')
    parser.add_argument('--rounds', type=int, default=3,
                        help='interleaved timing rounds')
    parser.add_argument('--device', default='cpu', help='timing device')
    parser.add_argument('--plot-metric', help='metric of the plot (default: '
                        'coco/AP, mIoU, else the first metric of the rows)')
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error('give CONFIG CHECKPOINT pairs (an odd number of paths '
                     'was given)')
    if args.names and len(args.names) != len(args.pairs) // 2:
        parser.error(f'--names has {len(args.names)} names for '
                     f'{len(args.pairs) // 2} models')
    return args


def _plain(metrics: dict) -> dict:
    return {k: (v.item() if hasattr(v, 'item') else v)
            for k, v in metrics.items()}


def evaluate(reference, cfg, checkpoint: str, work_dir: str, name: str
             ) -> dict:
    """The model's metrics on the reference test set, as tools/test.py."""
    from sapiens2_mm.apis.model_compare import evaluation_config
    from sapiens2_mm.apis.test_config import prepare_test_config
    from sapiens2_mm.engine.runners import build_runner
    cfg = evaluation_config(reference, cfg)
    prepare_test_config(cfg, checkpoint, work_dir=work_dir)
    cfg.experiment_name = f'compare_{name}_{time.strftime("%Y%m%d_%H%M%S")}'
    return _plain(build_runner(cfg).test())


def write_outputs(out_dir: str, rows: List[dict], warnings: List[str],
                  settings: dict, plot_metric: str) -> List[str]:
    """The four files, each written under a temporary name and renamed,
    never onto an existing file."""
    from sapiens2_mm.apis.model_compare import markdown_table, plot_rows
    from sapiens2_mm.utils.atomic_file import temporary_path
    from sapiens2_mm.utils.output_paths import rename_no_clobber
    text = markdown_table(rows, settings['batch_size'])
    if warnings:
        text += '\nWarnings:\n\n' + ''.join(f'* {w}\n' for w in warnings)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    contents = {
        'compare.md': text, 'compare.csv': buffer.getvalue(),
        'compare.json': json.dumps(dict(rows=rows, warnings=warnings,
                                        settings=settings), indent=2)}
    written = []
    for name in OUTPUTS:
        path = osp.join(out_dir, name)
        tmp = temporary_path(path)
        if name == 'compare.png':
            plot_rows(rows, plot_metric, tmp)
        else:
            with open(tmp, 'w') as f:
                f.write(contents[name])
        written.append(rename_no_clobber(tmp, path))
    return written


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    from sapiens2_mm.apis.model_compare import (
        build_timed_model,
        comparison_warnings,
        cost_row,
        default_names,
        input_shapes,
        primary_metric,
        table_rows,
        time_models,
    )
    from sapiens2_mm.apis.run_config import RunConfigError
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.config_file import load_config
    from sapiens2_mm.utils.output_paths import (
        OutputPathError,
        check_output_file,
        check_writable_dir,
    )
    register_all_modules(init_default_scope=False)
    pairs = list(zip(args.pairs[0::2], args.pairs[1::2]))
    try:
        configs = [load_config(config) for config, _ in pairs]
        for _, checkpoint in pairs:
            if not osp.isfile(checkpoint):
                raise RunConfigError(f'Checkpoint not found: {checkpoint!r}.')
        check_writable_dir(args.out_dir, '--out-dir')
        for name in OUTPUTS:  # before any model runs: no wasted evaluation
            check_output_file(osp.join(args.out_dir, name), overwrite=False,
                              what='comparison output')
        shapes = input_shapes(configs)
    except (RunConfigError, OutputPathError, ValueError) as err:
        sys.exit(f'error: {err}')
    names = default_names(configs, args.names)
    if len(set(names)) != len(names):
        sys.exit(f'error: row names must differ, got {names}; pass --names.')
    metrics = []
    for name, cfg, (_, checkpoint) in zip(names, configs, pairs):
        try:
            metrics.append(evaluate(configs[0], cfg, checkpoint,
                                    osp.join(args.out_dir, 'work', name),
                                    name))
        except RunConfigError as err:
            sys.exit(f'error: {name}: {err}')
    costs = [cost_row(cfg) for cfg in configs]
    models = [build_timed_model(cfg, args.device) for cfg in configs]
    speeds = time_models(models, shapes, args.batch_size, args.repeat,
                         args.rounds, args.device)
    rows = table_rows(names, configs, metrics, costs, speeds)
    warnings = comparison_warnings(names, configs, shapes)
    metric_keys = [k for k in rows[0] if k not in (
        'model', 'config', 'params_m', 'gmacs', 'gflops', 'input',
        'flip_test', 'images_per_s', 'speed_ratio')]
    plot_metric = args.plot_metric or primary_metric(metric_keys)
    if plot_metric not in rows[0]:
        sys.exit(f'error: --plot-metric {plot_metric!r} is not a column; '
                 f'columns: {metric_keys}')
    settings = dict(reference=configs[0].filename,
                    batch_size=args.batch_size, repeat=args.repeat,
                    rounds=args.rounds, device=args.device)
    written = write_outputs(args.out_dir, rows, warnings, settings,
                            plot_metric)
    with open(written[0]) as f:
        print(f.read())
    print('Written: ' + ', '.join(written))
    return dict(rows=rows, warnings=warnings, files=written)


if __name__ == '__main__':
    main()
