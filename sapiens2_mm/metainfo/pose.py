"""Pose metainfo: the 308-keypoint layout and mmpose's COCO-17 / WholeBody-133.

``keypoints308.json`` (exported from the official ``keypoints308.py``) is the
one copy of the 308-keypoint layout: :func:`keypoints308_dataset_info` reads
it into mmpose's ``dataset_info`` format, which datasets take directly as
``metainfo`` (mmpose's ``parse_pose_metainfo`` accepts the dict as well as a
``from_file`` path). A generated 2,725-line ``keypoints308.py`` copy of it
was shipped before; it parsed to the same metainfo.

COCO-17 and COCO-WholeBody-133 come from mmpose's own files (they ship inside the
mmpose package under ``.mim/configs/_base_/datasets``).
"""
import json
import os.path as osp
from typing import Dict

METAINFO_DIR = osp.dirname(osp.abspath(__file__))
KEYPOINTS308_JSON = osp.join(METAINFO_DIR, 'keypoints308.json')

_PAPER_INFO = dict(
    author='Khirodkar, Rawal and others',
    title='Sapiens2',
    container='International Conference on Learning Representations (ICLR)',
    year='2026',
    homepage='https://github.com/facebookresearch/sapiens2',
)


def load_keypoints308_json(path: str = KEYPOINTS308_JSON) -> dict:
    """The raw exported table (names, colors, swaps, skeleton, sigmas, groups)."""
    with open(path) as f:
        return json.load(f)


def keypoints308_dataset_info(path: str = KEYPOINTS308_JSON) -> dict:
    """The 308-keypoint layout as an mmpose ``dataset_info`` dict.

    Returns:
        dict with ``dataset_name``, ``paper_info``, ``keypoint_info`` (id ->
        name/id/color/type/swap), ``skeleton_info`` (id -> link/id/color),
        ``joint_weights``, ``sigmas`` and the part ``groups`` (names per body
        part, used by the 308 metric) plus ``coco_wholebody_to_sapiens308``.
    """
    raw = load_keypoints308_json(path)
    if raw['num_keypoints'] != len(raw['keypoints']):
        raise ValueError(
            f'{path}: num_keypoints={raw["num_keypoints"]} but '
            f'{len(raw["keypoints"])} keypoint entries.')
    keypoint_info = {}
    for i, kpt in enumerate(raw['keypoints']):
        if kpt['id'] != i:
            raise ValueError(f'{path}: keypoint #{i} has id {kpt["id"]}.')
        keypoint_info[i] = dict(
            name=kpt['name'], id=i, color=list(kpt['color']),
            type=kpt.get('type', ''), swap=kpt.get('swap', ''))
    skeleton_info = {
        i: dict(link=tuple(link['link']), id=i, color=list(link['color']))
        for i, link in enumerate(raw['skeleton'])
    }
    return dict(
        dataset_name=raw['dataset_name'],
        paper_info=_PAPER_INFO,
        keypoint_info=keypoint_info,
        skeleton_info=skeleton_info,
        joint_weights=list(raw['joint_weights']),
        sigmas=list(raw['sigmas']),
        groups={k: list(v) for k, v in raw['groups'].items()},
        coco_wholebody_to_sapiens308={
            int(k): int(v)
            for k, v in raw['coco_wholebody_to_sapiens308'].items()
        },
        min_visible_keypoints=raw.get('min_visible_keypoints', 8),
    )


def mmpose_metainfo_file(name: str) -> str:
    """Path of one of mmpose's own metainfo files, e.g. ``'coco'``.

    Args:
        name: ``'coco'`` (17 keypoints), ``'coco_wholebody'`` (133) or any other
            file stem under mmpose's ``configs/_base_/datasets``.

    Raises:
        FileNotFoundError: mmpose does not ship that file.
    """
    import mmpose
    root = osp.join(osp.dirname(mmpose.__file__), '.mim', 'configs', '_base_',
                    'datasets')
    path = osp.join(root, f'{name}.py')
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'mmpose has no metainfo file {name!r} (looked for {path}); '
            'pick a file name from that folder, e.g. "coco" or "coco_wholebody".')
    return path


def parsed_metainfo(name: str) -> Dict:
    """Parsed mmpose metainfo (flip_indices, sigmas, ...) by short name.

    Args:
        name: ``'sapiens308'`` / ``'keypoints308'``, ``'coco'`` or
            ``'coco_wholebody'`` (or another mmpose metainfo file stem).
    """
    from mmpose.datasets.datasets.utils import parse_pose_metainfo
    if name in ('sapiens308', 'keypoints308', 'goliath'):
        return parse_pose_metainfo(keypoints308_dataset_info())
    return parse_pose_metainfo(dict(from_file=mmpose_metainfo_file(name)))

