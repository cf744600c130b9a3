"""Paths of the tiny CPU configs of each task (names owned by the task code),
and the person boxes of the COCO sample photos."""
import glob
import json
import os.path as osp

from tests.conftest import DATA_DIR, REPO_DIR

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


def coco_sample_boxes() -> dict:
    """File name -> ``[[x1, y1, x2, y2], ...]`` of every annotated person of
    tests/data/coco_sample (a ``BoxFile`` JSON)."""
    from sapiens2_mm.apis.box_sources import coco_person_boxes
    with open(osp.join(DATA_DIR, 'coco_sample', 'test_coco.json')) as f:
        return coco_person_boxes(json.load(f))
