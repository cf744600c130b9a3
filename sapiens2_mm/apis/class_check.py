"""Every place of a config that depends on the class or keypoint set agrees.

A segmentation config names its classes in several places: the head's
``num_classes``, the loss ``class_weight``, the dataset ``metainfo``, the
annotation loader's ``num_classes``, the flip augmentation's
``swap_seg_labels`` and the flip test's ``swap_pairs``. A config derived from
another (a 20-class set from the 29-class recipe) that changes some of them
trains without an error and with wrong labels: 29-class flip pairs swap
``Upper_Clothing`` with ``Left_Upper_Arm`` of the new set. mmseg notices none
of it (or fails inside the loss with a shape error). :func:`check_config_classes`
reads every place before anything is built and raises
:class:`ClassMismatchError` naming each one; ``tools/train.py`` and
``tools/test.py`` call it (:mod:`.run_config`).

Pose configs: the head's ``out_channels`` against every dataset's keypoint
count (its metainfo file), and the metainfo's own sigmas and flip partners.

docs/custom_data.md shows a config that sets every place from one metainfo.
"""
import inspect
import re
from typing import List, Optional, Sequence, Tuple

from mmengine.config import Config

from ..registry import DATASETS, TRANSFORMS
from ..utils.setup_env import qualified_type

LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


class ClassMismatchError(ValueError):
    """Places of a config disagree about the classes or keypoints."""


def _short(type_value) -> str:
    return str(getattr(type_value, '__name__', type_value)).split('.')[-1]


def _default(registry, cfg: Config, type_value, name: str):
    """The constructor default of ``name`` for a config ``type``."""
    cls = type_value if inspect.isclass(type_value) else registry.get(
        qualified_type(cfg, type_value))
    if cls is None:
        return None
    for klass in cls.__mro__:
        init = klass.__dict__.get('__init__')
        if init is not None and name in inspect.signature(init).parameters:
            default = inspect.signature(init).parameters[name].default
            return None if default is inspect.Parameter.empty else default
    return None


def _steps(pipeline, where: str):
    """(where, step) of every pipeline step, inside TestTimeAug too."""
    for i, step in enumerate(pipeline or []):
        if not isinstance(step, dict):
            continue
        here = f'{where}[{i}]'
        yield here, step
        for j, branch in enumerate(step.get('transforms') or []):
            inner = branch if isinstance(branch, list) else [branch]
            yield from _steps(inner, f'{here}.transforms[{j}]')


def _pipelines(cfg: Config):
    """(where, pipeline) of every dataloader and the TTA pipeline."""
    for loader in LOADERS:
        dataset = (cfg.get(loader) or {}).get('dataset') or {}
        if isinstance(dataset, dict) and dataset.get('pipeline'):
            yield f'{loader}.dataset.pipeline', dataset['pipeline']
    if cfg.get('tta_pipeline'):
        yield 'tta_pipeline', cfg.tta_pipeline


def _dataset_metainfo(cfg: Config, dataset: dict) -> Tuple[dict, str]:
    """The metainfo a dataset config gives: its ``metainfo``, else its
    class's ``METAINFO``; and which of the two."""
    given = dataset.get('metainfo') or {}
    if given:
        return dict(given), 'metainfo'
    kind = dataset.get('type')
    cls = kind if inspect.isclass(kind) else (
        DATASETS.get(qualified_type(cfg, kind)) if kind else None)
    return dict(getattr(cls, 'METAINFO', None) or {}), \
        f'METAINFO of {_short(kind)}'


def _heads(cfg: Config):
    """(where, head config) of the decode and auxiliary heads."""
    model = cfg.get('model') or {}
    for key in ('decode_head', 'auxiliary_head'):
        heads = model.get(key)
        if isinstance(heads, dict):
            yield f'model.{key}', heads
        elif isinstance(heads, (list, tuple)):
            for i, head in enumerate(heads):
                yield f'model.{key}[{i}]', head


def _losses(head: dict, where: str):
    losses = head.get('loss_decode')
    if isinstance(losses, dict):
        yield f'{where}.loss_decode', losses
    elif isinstance(losses, (list, tuple)):
        for i, loss in enumerate(losses):
            yield f'{where}.loss_decode[{i}]', loss


def _name_twins(classes: Sequence[str]) -> Optional[set]:
    """Left/right pairs by name (``Left_Foot`` / ``Right_Foot``,
    ``left arm`` / ``right arm``), or None when no name says left/right."""
    tokens = [re.split(r'[_\s\-]+', str(c).lower()) for c in classes]
    index = {tuple(t): i for i, t in enumerate(tokens)}
    pairs, sided = set(), False
    for i, words in enumerate(tokens):
        if 'left' in words:
            sided = True
            twin = tuple('right' if w == 'left' else w for w in words)
            if twin in index:
                pairs.add(frozenset((i, index[twin])))
        sided = sided or 'right' in words
    return pairs if sided else None


def _seg_problems(cfg: Config) -> List[str]:
    counts: List[Tuple[str, int, str]] = []  # (where, count, what)
    for where, head in _heads(cfg):
        if 'num_classes' in head:
            counts.append((f'{where}.num_classes', head['num_classes'], ''))
        for lwhere, loss in _losses(head, where):
            if loss.get('class_weight') is not None and not isinstance(
                    loss['class_weight'], str):
                counts.append((f'{lwhere}.class_weight',
                               len(loss['class_weight']), ' values'))
    names = None
    for loader in LOADERS:
        dataset = (cfg.get(loader) or {}).get('dataset') or {}
        if not isinstance(dataset, dict) or not dataset.get('type'):
            continue
        meta, source = _dataset_metainfo(cfg, dataset)
        if meta.get('classes'):
            counts.append((f'{loader}.dataset ({source}) classes',
                           len(meta['classes']), ' names'))
            names = names or list(meta['classes'])
    pair_places = []
    for where, pipeline in _pipelines(cfg):
        for here, step in _steps(pipeline, where):
            kind = _short(step.get('type'))
            if kind == 'LoadSegAnnotations':
                num = step.get('num_classes', _default(
                    TRANSFORMS, cfg, step['type'], 'num_classes'))
                counts.append((f'{here} LoadSegAnnotations.num_classes'
                               + ('' if 'num_classes' in step else
                                  ' (default)'), num, ''))
            if kind == 'RandomFlip' and step.get('swap_seg_labels'):
                pair_places.append((f'{here} RandomFlip.swap_seg_labels',
                                    step['swap_seg_labels']))
    tta = cfg.get('tta_model') or {}
    if _short(tta.get('type')) == 'SegFlipTTAModel':
        pairs = tta.get('swap_pairs')
        if pairs is None:  # the model falls back to the 29-class pairs
            from ..metainfo.seg29 import seg29_flip_swap_pairs
            pair_places.append(('tta_model.swap_pairs (default: the 29 '
                                'Sapiens2 classes)', seg29_flip_swap_pairs()))
        else:
            pair_places.append(('tta_model.swap_pairs', pairs))
    if not counts:
        return []
    problems = []
    if len({n for _, n, _ in counts}) > 1:
        problems.append('the class count differs:\n' + '\n'.join(
            f'    {where}: {n}{what}' for where, n, what in counts))
    num = counts[0][1]
    twins = _name_twins(names) if names and len(names) == num else None
    for where, pairs in pair_places:
        pairs = [tuple(p) for p in pairs]
        outside = [p for p in pairs if max(p) >= num or min(p) < 0]
        if outside:
            problems.append(
                f'{where} holds pairs outside the {num} classes '
                f'(0..{num - 1}): {outside}')
            continue
        if twins is not None and {frozenset(p) for p in pairs} != twins:
            wrong = [(a, b, names[a], names[b]) for a, b in pairs
                     if frozenset((a, b)) not in twins]
            missing = sorted(tuple(sorted(t)) for t in
                             twins - {frozenset(p) for p in pairs})
            text = ', '.join(f'{a}-{b} ({na} / {nb})'
                             for a, b, na, nb in wrong[:6])
            expected = sorted(tuple(sorted(t)) for t in twins)
            problems.append(
                f'{where} does not swap the left/right classes by name: ' +
                (f'it swaps {text}' if wrong else 'it') +
                (f'; left/right twins left unswapped: {missing}'
                 if missing else '') + f'. By name the pairs are {expected}.')
    return problems


def _pose_problems(cfg: Config) -> List[str]:
    from mmpose.datasets.datasets.utils import parse_pose_metainfo
    head = (cfg.get('model') or {}).get('head') or {}
    if 'out_channels' not in head:
        return []
    counts = [('model.head.out_channels', head['out_channels'])]
    problems = []
    for loader in LOADERS:
        dataset = (cfg.get(loader) or {}).get('dataset') or {}
        if not isinstance(dataset, dict) or not dataset.get('type'):
            continue
        meta, source = _dataset_metainfo(cfg, dataset)
        if not meta:
            continue
        try:
            parsed = parse_pose_metainfo(meta)
        except (KeyError, ValueError, FileNotFoundError) as err:
            problems.append(f'{loader}.dataset ({source}) cannot be read: '
                            f'{type(err).__name__}: {err}')
            continue
        num = parsed['num_keypoints']
        counts.append((f'{loader}.dataset ({source}) keypoints', num))
        sigmas = parsed.get('sigmas')
        if sigmas is not None and len(sigmas) != num:
            problems.append(f'{loader}.dataset ({source}) has {len(sigmas)} '
                            f'sigmas for {num} keypoints')
    if len({n for _, n in counts}) > 1:
        problems.insert(0, 'the keypoint count differs:\n' + '\n'.join(
            f'    {where}: {n}' for where, n in counts))
    return problems


def class_problems(cfg: Config) -> List[str]:
    """What disagrees in ``cfg`` (empty when every place agrees)."""
    model = cfg.get('model') or {}
    if not isinstance(model, dict):
        return []
    kind = qualified_type(cfg, model.get('type'))
    if kind == 'mmpose.TopdownPoseEstimator':
        return _pose_problems(cfg)
    if any('num_classes' in head for _, head in _heads(cfg)):
        return _seg_problems(cfg)
    return []


def check_config_classes(cfg: Config) -> None:
    """Raise :class:`ClassMismatchError` naming every place of ``cfg`` that
    disagrees about the classes (seg) or keypoints (pose).

    Raises:
        ClassMismatchError: with one line per problem and what to do.
    """
    problems = class_problems(cfg)
    if problems:
        raise ClassMismatchError(
            f'{cfg.filename or "The config"} would train or test with '
            'mismatched labels:\n  - ' + '\n  - '.join(problems) +
            '\nSet every place from one metainfo (docs/custom_data.md).')


__all__ = ['ClassMismatchError', 'check_config_classes', 'class_problems']
