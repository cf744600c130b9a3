"""Model-zoo rows for several models on one test set (compare_models.py).

Every model is evaluated on the reference (first) config's test data and
evaluator, each through its own test pipeline (its input size, crop and
normalisation) and the checked loading of ``tools/test.py``
(:func:`evaluation_config` + :func:`~.test_config.prepare_test_config`). Its
row adds the parameters, MACs and FLOPs = 2 x MACs at its test input size
(:mod:`.model_cost`) and the images per second of its network, timed in
interleaved rounds at one batch size (:func:`time_models`). Differences that
make the rows not comparable as they stand (input size, flip test, loss
weights, the metric convention of each config) are returned as warnings
(:func:`comparison_warnings`).
"""
import copy
import statistics
import time
from typing import Dict, List, Optional, Sequence

import torch
from mmengine.config import Config

from ..registry import MODELS
from ..utils.setup_env import config_scope, in_config_scope
from .model_cost import config_cost, config_input_shape, network_forward

#: Per-class entries of a metric dict (IoU.<class>, Acc.<class>) are left
#: out of the rows.
PER_CLASS_PREFIXES = ('IoU.', 'Acc.', 'Fscore.', 'Precision.', 'Recall.')
#: The COCO keypoint metrics a row shows (of the ten CocoMetric returns).
COCO_SHOWN = ('coco/AP', 'coco/AP .5', 'coco/AR')
#: mmseg's convention, evaluated beside an official SegIoUMetric.
MMSEG_PREFIX = 'mmseg'
#: The metric a plot shows by default, the first of these a row has.
PRIMARY_METRICS = ('coco/AP', 'mIoU', 'normal_mae')


def scoped(node, scope: str):
    """A copy of a config dict whose unprefixed ``type`` strings name
    ``scope``, so it builds under another config's default scope
    (``'SegIoUMetric'`` of a sapiens2_mm config inside an mmseg config).
    mmengine's ``_scope_`` annotation (a value taken from an ``mmpose::``
    base) names the scope of its dict and is folded into the types."""
    if isinstance(node, dict):
        scope = node.get('_scope_') or scope
        out = {k: scoped(v, scope) for k, v in node.items()
               if k != '_scope_'}
        kind = out.get('type')
        if isinstance(kind, str) and '.' not in kind:
            out['type'] = f'{scope}.{kind}'
        return out
    if isinstance(node, (list, tuple)):
        return type(node)(scoped(v, scope) for v in node)
    return node


def _dataset(cfg: Config) -> dict:
    return copy.deepcopy(dict((cfg.get('test_dataloader') or {}).get(
        'dataset') or {}))


def _data_identity(dataset: dict) -> tuple:
    """What a test set is (type, root, annotation file, folders), not how it
    is read (pipeline)."""
    dataset = {k: v for k, v in dataset.items()
               if k not in ('pipeline', 'test_mode')}
    return tuple(sorted((k, repr(v)) for k, v in dataset.items()))


def official_seg_metric(evaluator) -> bool:
    """Whether ``evaluator`` is SegIoUMetric counting absent classes as 0."""
    return (isinstance(evaluator, dict)
            and str(evaluator.get('type', '')).endswith('SegIoUMetric')
            and evaluator.get('nan_to_num', 0.0) is not None)


def evaluation_config(reference: Config, cfg: Config) -> Config:
    """``cfg`` set to test on the reference's data with its evaluator.

    The reference's test dataset (type, files, metainfo) is kept, its
    pipeline replaced by ``cfg``'s test pipeline; the evaluator is the
    reference's, and where it is the official SegIoUMetric (absent classes
    count as 0) the same metric in mmseg's convention (absent classes
    skipped) is added under the ``mmseg/`` prefix, so a row reports both.
    """
    cfg = copy.deepcopy(cfg)
    ref_scope = config_scope(reference)
    dataset = scoped(_dataset(reference), ref_scope)
    own = _dataset(cfg)
    dataset['pipeline'] = own.get('pipeline') or cfg.get('test_pipeline')
    loader = copy.deepcopy(dict(cfg.test_dataloader))
    loader['dataset'] = dataset
    cfg.test_dataloader = loader
    evaluator = scoped(copy.deepcopy(reference.test_evaluator), ref_scope)
    metrics = list(evaluator) if isinstance(evaluator, list) else [evaluator]
    if official_seg_metric(metrics[0]):
        metrics.append(dict(metrics[0], nan_to_num=None,
                            prefix=MMSEG_PREFIX))
    cfg.test_evaluator = metrics if len(metrics) > 1 else metrics[0]
    return cfg


def shown_metrics(metrics: Dict[str, float]) -> Dict[str, float]:
    """The entries of a row: no per-class values and no ``extra/`` ones;
    of COCO's ten, AP, AP .5 and AR; of the mmseg-convention copy, what the
    convention changes (``aAcc`` counts pixels, so it is the same)."""
    if any(k in metrics for k in COCO_SHOWN):
        return {k: metrics[k] for k in COCO_SHOWN if k in metrics}
    return {k: v for k, v in metrics.items()
            if not k.split('/')[-1].startswith(PER_CLASS_PREFIXES)
            and k != f'{MMSEG_PREFIX}/aAcc' and not k.startswith('extra/')}


def primary_metric(keys: Sequence[str]) -> str:
    """The metric a plot shows: the first of :data:`PRIMARY_METRICS` among
    ``keys``, else the first key."""
    for name in PRIMARY_METRICS:
        if name in keys:
            return name
    return keys[0]


def flip_test(cfg: Config) -> bool:
    """Whether the config's test averages a flipped view."""
    test_cfg = (cfg.get('model') or {}).get('test_cfg') or {}
    return bool(test_cfg.get('flip_test', False))


def loss_summary(cfg: Config) -> List[str]:
    """``type(weight, class weights)`` of every loss of the model config."""
    found = []

    def walk(node, key=''):
        if isinstance(node, dict):
            if 'loss' in key and 'type' in node:
                weights = node.get('class_weight')
                found.append(
                    f'{str(node["type"]).split(".")[-1]}'
                    f'(weight {node.get("loss_weight", 1.0)}' +
                    (f', {len(weights)} class weights'
                     if isinstance(weights, (list, tuple)) else '') + ')')
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, key)

    walk(dict(cfg.get('model') or {}))
    return found


def comparison_warnings(names: Sequence[str], configs: Sequence[Config],
                        shapes: Sequence) -> List[str]:
    """What differs between the configs in ways that bias the rows."""
    warnings = []

    def differ(what: str, values: list, hint: str) -> None:
        if len({repr(v) for v in values}) > 1:
            warnings.append(f'{what} differ: ' + '; '.join(
                f'{n}: {v}' for n, v in zip(names, values)) + f'. {hint}')

    differ('test input sizes (H, W)', [tuple(s) for s in shapes],
           'FLOPs and speed scale with the input: compare at equal sizes '
           'where it matters.')
    differ('flip tests', [flip_test(c) for c in configs],
           'A flip test doubles the test cost and usually raises the metric.')
    differ('losses', [' + '.join(loss_summary(c)) or '-' for c in configs],
           'The models were trained with different losses / weights.')
    reference = configs[0]
    ref_data = _data_identity(_dataset(reference))
    for name, cfg in zip(names[1:], configs[1:]):
        if _data_identity(_dataset(cfg)) != ref_data:
            warnings.append(
                f'{name}: its config tests on other data than the reference '
                f'({names[0]}); every row is evaluated on the reference\'s.')
    ref_eval = reference.test_evaluator
    if official_seg_metric(ref_eval):
        warnings.append(
            'metric convention: mIoU / mAcc count a class absent from both '
            'the labels and the predictions as 0 (official Sapiens2 '
            'SegEvaluator); mmseg\'s IoUMetric (the mmseg model zoo) skips '
            f'it. Both are reported: mIoU and {MMSEG_PREFIX}/mIoU.')
    for name, cfg in zip(names, configs):
        own = cfg.get('test_evaluator')
        if own is not None and repr(scoped(own, config_scope(cfg))) != repr(
                scoped(ref_eval, config_scope(reference))):
            kind = own.get('type') if isinstance(own, dict) else own
            warnings.append(
                f'{name}: its own config evaluates with {kind}; the rows use '
                f'the reference evaluator, so they may differ from what '
                f'{name}\'s config reports (e.g. a model zoo table).')
    return warnings


def build_timed_model(cfg: Config, device: str) -> torch.nn.Module:
    """The config's network (random weights: speed does not depend on
    them) in eval mode on ``device``."""
    from .model_cost import drop_pretrained
    model_cfg = copy.deepcopy(dict(cfg.model))
    drop_pretrained(model_cfg)
    with in_config_scope(cfg):
        model = MODELS.build(model_cfg)
    return model.to(device).eval()


def time_models(models: Sequence[torch.nn.Module], shapes: Sequence,
                batch_size: int = 4, repeat: int = 3, rounds: int = 3,
                device: str = 'cpu') -> List[dict]:
    """Images per second of each network forward (no decoding, no flip),
    ``batch_size`` inputs of its test size at a time.

    The models run in ``rounds`` interleaved rounds (the order rotates), each
    ``repeat`` batches after one warm-up batch; a model's ratio to the first
    is taken within each round and the median reported, so a change of load
    hits every model alike.

    Returns:
        Per model: ``images_per_s`` (median over rounds), ``ratio`` (median
        of the per-round ratios to the first model) and ``rounds`` (images/s
        of each round).
    """
    inputs = [torch.zeros(batch_size, 3, *shape, device=device)
              for shape in shapes]
    speeds = [[] for _ in models]

    def sync():
        if str(device).startswith('cuda'):
            torch.cuda.synchronize()

    with torch.no_grad():
        for model, x in zip(models, inputs):  # warm-up
            network_forward(model, x)
        for rnd in range(rounds):
            order = list(range(len(models)))
            order = order[rnd % len(order):] + order[:rnd % len(order)]
            for i in order:
                sync()
                start = time.perf_counter()
                for _ in range(repeat):
                    network_forward(models[i], inputs[i])
                sync()
                seconds = time.perf_counter() - start
                speeds[i].append(batch_size * repeat / seconds)
    out = []
    for speed in speeds:
        ratios = [s / first for s, first in zip(speed, speeds[0])]
        out.append(dict(images_per_s=statistics.median(speed),
                        ratio=statistics.median(ratios), rounds=speed))
    return out


def cost_row(cfg: Config) -> dict:
    """Params, MACs and FLOPs of the config's model at its test size."""
    cost = config_cost(cfg)
    return dict(params_m=cost['params'] / 1e6, gmacs=cost['macs'] / 1e9,
                gflops=cost['flops'] / 1e9, input=tuple(cost['shape']))


def input_shapes(configs: Sequence[Config]) -> List[tuple]:
    return [config_input_shape(cfg)[0] for cfg in configs]


def table_rows(names, configs, metrics, costs, speeds) -> List[dict]:
    """One flat dict per model: name, config, shown metrics, cost, speed."""
    rows = []
    for name, cfg, metric, cost, speed in zip(names, configs, metrics, costs,
                                              speeds):
        row = dict(model=name, config=cfg.filename or '')
        row.update({k: float(v) for k, v in shown_metrics(metric).items()})
        row.update(params_m=cost['params_m'], gmacs=cost['gmacs'],
                   gflops=cost['gflops'],
                   input=f'{cost["input"][0]}x{cost["input"][1]}',
                   flip_test=flip_test(cfg),
                   images_per_s=speed['images_per_s'],
                   speed_ratio=speed['ratio'])
        rows.append(row)
    return rows


COLUMN_TITLES = dict(
    model='model', params_m='params (M)', gmacs='GMACs (zoo "FLOPs")',
    gflops='GFLOPs (2 x MACs)', input='input HxW', flip_test='flip test',
    images_per_s='img/s', speed_ratio='speed vs first')


def markdown_table(rows: List[dict], batch_size: int) -> str:
    """The rows as a Markdown table (the config path left out)."""
    keys = [k for k in rows[0] if k != 'config']
    titles = [COLUMN_TITLES.get(k, k) for k in keys]

    def cell(value):
        if isinstance(value, bool):
            return 'yes' if value else 'no'
        if isinstance(value, float):
            return f'{value:.2f}' if abs(value) >= 0.1 or value == 0 else \
                f'{value:.3f}'
        return str(value)

    lines = ['| ' + ' | '.join(titles) + ' |',
             '|' + '---|' * len(keys)]
    lines += ['| ' + ' | '.join(cell(r[k]) for k in keys) + ' |'
              for r in rows]
    lines.append('')
    lines.append(f'img/s: network forward only (no decoding, no flip), batch '
                 f'{batch_size}, median of interleaved rounds; speed vs '
                 'first: median of the per-round ratios.')
    return '\n'.join(lines) + '\n'


def plot_rows(rows: List[dict], metric: str, path: str) -> None:
    """PNG: ``metric`` against GFLOPs (2 x MACs) and against img/s."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((axes[0], 'gflops', 'GFLOPs (2 x MACs)'),
                           (axes[1], 'images_per_s', 'images / s')):
        for row in rows:
            ax.scatter(row[key], row[metric], s=40)
            ax.annotate(row['model'], (row[key], row[metric]),
                        textcoords='offset points', xytext=(5, 5),
                        fontsize=8)
        ax.set_xlabel(label)
        ax.set_ylabel(metric)
        ax.set_xscale('log')
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.margins(x=0.2, y=0.1)  # room for the names
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def default_names(configs: Sequence[Config],
                  names: Optional[Sequence[str]] = None) -> List[str]:
    """Row names: given, else the config file names without extension."""
    import os.path as osp
    if names:
        return list(names)
    return [osp.splitext(osp.basename(c.filename or f'model{i}'))[0]
            for i, c in enumerate(configs)]
