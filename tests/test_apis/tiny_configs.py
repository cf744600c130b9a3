"""Paths of the tiny CPU configs of each task (names owned by the task code),
their models, and the person boxes of the COCO sample photos."""
import glob
import json
import os.path as osp
from typing import Optional

from tests.conftest import COCO_DIR, REPO_DIR

# tasks with several tiny configs: the one the generic tests use (pose also
# has sapiens2-tiny_1xb12-300_sapiens308sample-128x96.py, tested in
# tests/test_docs_commands.py)
PRIMARY = {'pose': 'sapiens2-tiny_1xb12-300_cocosample-128x96.py'}


def tiny_config(task: str) -> str:
    """The ``configs/<task>/sapiens2-tiny_*.py`` config (exactly one, or the
    task's :data:`PRIMARY` one)."""
    found = sorted(glob.glob(
        osp.join(REPO_DIR, 'configs', task, 'sapiens2-tiny_*.py')))
    if task in PRIMARY:
        found = [p for p in found if osp.basename(p) == PRIMARY[task]]
    assert len(found) == 1, f'expected one tiny {task} config, got {found}'
    return found[0]


def tiny_model(task: str, checkpoint: Optional[str] = None, **kwargs):
    """``init_model`` of the task's :func:`tiny_config` (random weights
    unless ``checkpoint``; ``kwargs`` go to ``init_model``)."""
    from sapiens2_mm.apis import init_model
    return init_model(tiny_config(task), checkpoint, **kwargs)


def coco_sample_boxes() -> dict:
    """File name -> ``[[x1, y1, x2, y2], ...]`` of every annotated person of
    tests/data/coco_sample (a ``BoxFile`` JSON)."""
    from sapiens2_mm.apis.box_sources import coco_person_boxes
    with open(osp.join(COCO_DIR, 'test_coco.json')) as f:
        return coco_person_boxes(json.load(f))
