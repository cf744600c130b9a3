"""Convert COCO-WholeBody keypoint annotations to the Sapiens2 308-keypoint layout.

The 53 keypoints that COCO-WholeBody shares with the 308 layout (17 body, 6 foot,
30 hand joints; the table ``coco_wholebody_to_sapiens308`` of
``sapiens2_mm/metainfo/keypoints308.json``) are copied; the other 255 (dense
face, extra body points, hand roots of the 133 layout) are written as invisible
``0, 0, 0``. Each annotation gets ``goliath_wholebody_kpts`` (308 x 3 values)
and a recounted ``num_keypoints`` (labelled keypoints among the 308); images,
``bbox``, ``area``, ``iscrowd``, ``segmentation`` and ids are kept. The category's
``keypoints`` names become the 308 names and its skeleton the 308 skeleton.

Usage::

    python tools/dataset_converters/coco_wholebody_to_sapiens308.py \
        coco_wholebody_val_v1.0.json person_keypoints_val2017_308.json

The script only needs the standard library and numpy (no torch).
"""
import argparse
import importlib.util
import json
import os.path as osp
import sys

import numpy as np

WHOLEBODY_FIELDS = (('keypoints', 17), ('foot_kpts', 6), ('face_kpts', 68),
                    ('lefthand_kpts', 21), ('righthand_kpts', 21))
SOURCE_FIELDS = tuple(f for f, _ in WHOLEBODY_FIELDS) + (
    'face_box', 'lefthand_box', 'righthand_box', 'face_valid',
    'lefthand_valid', 'righthand_valid', 'foot_valid')
TARGET_FIELD = 'goliath_wholebody_kpts'
NUM_TARGET = 308


def metainfo_path() -> str:
    """Path of keypoints308.json without importing sapiens2_mm (no torch)."""
    spec = importlib.util.find_spec('sapiens2_mm')
    if spec is not None and spec.submodule_search_locations:
        root = list(spec.submodule_search_locations)[0]
    else:  # running from a source checkout that is not installed
        root = osp.join(osp.dirname(osp.abspath(__file__)), '..', '..',
                        'sapiens2_mm')
    return osp.join(root, 'metainfo', 'keypoints308.json')


def load_layout(path: str = None) -> dict:
    """Names, skeleton and the 133 -> 308 index map of the 308 layout."""
    with open(path or metainfo_path()) as f:
        info = json.load(f)
    names = [k['name'] for k in info['keypoints']]
    name2id = {n: i for i, n in enumerate(names)}
    skeleton = [[name2id[a] + 1, name2id[b] + 1]
                for a, b in (s['link'] for s in info['skeleton'])]
    mapping = {int(k): int(v)
               for k, v in info['coco_wholebody_to_sapiens308'].items()}
    return dict(names=names, skeleton=skeleton, mapping=mapping)


def wholebody_keypoints(ann: dict) -> np.ndarray:
    """The 133 keypoints of a COCO-WholeBody annotation as (133, 3)."""
    parts = []
    for name, num in WHOLEBODY_FIELDS:
        if name not in ann:
            raise ValueError(
                f'annotation id={ann.get("id")} has no {name!r}: the input is '
                'not COCO-WholeBody (it needs keypoints, foot_kpts, face_kpts, '
                'lefthand_kpts and righthand_kpts).')
        values = np.asarray(ann[name], dtype=np.float64)
        if values.size != num * 3:
            raise ValueError(
                f'annotation id={ann.get("id")}: {name!r} has {values.size} '
                f'values, expected {num * 3} ({num} keypoints as x, y, v).')
        parts.append(values.reshape(num, 3))
    return np.concatenate(parts)


def convert_annotation(ann: dict, mapping: dict, keep_source: bool) -> dict:
    """One COCO-WholeBody annotation -> one 308-keypoint annotation."""
    src = wholebody_keypoints(ann)
    dst = np.zeros((NUM_TARGET, 3))
    for i133, i308 in mapping.items():
        dst[i308] = src[i133]
    out = {k: v for k, v in ann.items()
           if keep_source or k not in SOURCE_FIELDS}
    values = dst.reshape(-1).tolist()
    out[TARGET_FIELD] = [int(v) if float(v).is_integer() else v
                         for v in values]
    out['num_keypoints'] = int(np.count_nonzero(dst[:, 2] > 0))
    return out


def convert(data: dict, layout: dict = None, keep_source: bool = False) -> dict:
    """Convert a loaded COCO-WholeBody json (dict) to the 308 layout.

    Args:
        data: COCO-WholeBody dataset dict.
        layout: :func:`load_layout` output (loaded if None).
        keep_source: also keep the COCO-WholeBody keypoint fields.

    Returns:
        dict: the converted dataset.
    """
    if not isinstance(data, dict) or 'annotations' not in data or \
            'images' not in data:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError('input is not a COCO annotation file: expected a dict '
                         f"with 'images' and 'annotations', got {keys}.")
    layout = layout or load_layout()
    out = {k: v for k, v in data.items() if k != 'annotations'}
    out['annotations'] = [
        convert_annotation(a, layout['mapping'], keep_source)
        for a in data['annotations']
    ]
    cats = data.get('categories') or [dict(id=1, name='person',
                                           supercategory='person')]
    out['categories'] = [
        dict(c, keypoints=layout['names'], skeleton=layout['skeleton'])
        for c in cats
    ]
    return out


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Convert COCO-WholeBody keypoint annotations to the '
        'Sapiens2 308-keypoint layout (field goliath_wholebody_kpts).')
    parser.add_argument('input', help='COCO-WholeBody json, e.g. '
                        'coco_wholebody_val_v1.0.json')
    parser.add_argument('output', help='output json path')
    parser.add_argument('--keep-source-fields', action='store_true',
                        help='also keep the COCO-WholeBody keypoint fields')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace an existing output file (never the '
                        'input)')
    return parser, parser.parse_args(argv)


def main(argv=None) -> int:
    parser, args = parse_args(argv)
    from sapiens2_mm.utils.output_paths import OutputPathError, check_output_file
    if not osp.isfile(args.input):
        parser.error(f'input file {args.input!r} does not exist')
    try:
        check_output_file(args.output, inputs=[args.input],
                          overwrite=args.overwrite, what='output json')
    except OutputPathError as err:
        parser.error(str(err))
    try:
        with open(args.input) as f:
            data = json.load(f)
    except json.JSONDecodeError as err:
        parser.error(f'{args.input!r} is not valid json: {err}')
    try:
        out = convert(data, keep_source=args.keep_source_fields)
    except ValueError as err:
        parser.error(f'{args.input}: {err}')
    with open(args.output, 'w') as f:
        json.dump(out, f)
    anns = out['annotations']
    print(f'wrote {len(anns)} annotations on {len(out["images"])} images to '
          f'{args.output} ({sum(a["num_keypoints"] > 0 for a in anns)} with '
          'labelled keypoints)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
