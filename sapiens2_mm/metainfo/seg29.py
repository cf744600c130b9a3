"""Metainfo of the 29 Sapiens2 body-part classes, read from ``seg29.json``.

``seg29.json`` (exported from the official ``seg_utils.py``, see docs/seg.md)
holds the class names, the "dome29" palette (RGB), the CE class weights, the
ignore index and the horizontal-flip swap pairs. Everything seg-related reads it
through :func:`seg29_metainfo` so there is one source of truth.
"""
import json
import os.path as osp
from functools import lru_cache
from typing import Dict, List, Tuple

SEG29_JSON = osp.join(osp.dirname(osp.abspath(__file__)), 'seg29.json')


@lru_cache(maxsize=4)
def _read(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def seg29_metainfo(path: str = SEG29_JSON) -> Dict:
    """Dataset metainfo for mmseg datasets and metrics.

    Returns:
        dict with ``classes`` (29 names), ``palette`` (29 RGB lists),
        ``class_weight`` (29 floats), ``ignore_index`` (255) and
        ``flip_swap_pairs`` (list of (left, right) label pairs).
    """
    raw = _read(path)
    classes = sorted(raw['classes'], key=lambda c: c['id'])
    if [c['id'] for c in classes] != list(range(len(classes))):
        raise ValueError(f'{path}: class ids must be 0..{len(classes) - 1}.')
    return dict(
        classes=tuple(c['name'] for c in classes),
        palette=[list(c['color']) for c in classes],
        class_weight=[float(w) for w in raw['class_weight']],
        ignore_index=int(raw['ignore_index']),
        flip_swap_pairs=[tuple(p) for p in raw['flip_swap_pairs']],
    )


def seg29_class_weight(path: str = SEG29_JSON) -> List[float]:
    """The official CE class weights (29 floats)."""
    return seg29_metainfo(path)['class_weight']


def seg29_flip_swap_pairs(path: str = SEG29_JSON) -> List[Tuple[int, int]]:
    """Left/right label pairs swapped by a horizontal flip."""
    return seg29_metainfo(path)['flip_swap_pairs']
