"""tools/dataset_converters/coco_wholebody_to_sapiens308.py on the bundled
COCO-WholeBody sample."""
import json
import os.path as osp
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import COCO_DIR, REPO_DIR, load_tool, subprocess_budget

SCRIPT = osp.join(REPO_DIR, 'tools', 'dataset_converters',
                  'coco_wholebody_to_sapiens308.py')
SRC = osp.join(COCO_DIR, 'test_coco_wholebody.json')
FIELDS = ('keypoints', 'foot_kpts', 'face_kpts', 'lefthand_kpts',
          'righthand_kpts')


@pytest.fixture(scope='module')
def tool():
    return load_tool('dataset_converters/coco_wholebody_to_sapiens308')


def _meta():
    path = osp.join(REPO_DIR, 'sapiens2_mm', 'metainfo', 'keypoints308.json')
    with open(path) as f:
        return json.load(f)


def test_convert_sample_values(tmp_path):
    out_path = tmp_path / 'out.json'
    proc = subprocess.run([sys.executable, SCRIPT, SRC, str(out_path)],
                          capture_output=True, text=True,
                          timeout=subprocess_budget(10))
    assert proc.returncode == 0, proc.stderr
    with open(SRC) as f:
        src = json.load(f)
    with open(out_path) as f:
        out = json.load(f)
    meta = _meta()
    mapping = {int(k): v for k, v in meta['coco_wholebody_to_sapiens308'].items()}
    assert len(mapping) == 53
    names = [k['name'] for k in meta['keypoints']]
    assert out['images'] == src['images']
    assert out['categories'][0]['keypoints'] == names
    assert len(out['categories'][0]['skeleton']) == len(meta['skeleton'])
    unmapped = np.setdiff1d(np.arange(308), list(mapping.values()))
    assert len(unmapped) == 255
    assert len(out['annotations']) == len(src['annotations'])
    for a_src, a_out in zip(src['annotations'], out['annotations']):
        for key in ('id', 'image_id', 'bbox', 'area', 'iscrowd',
                    'category_id'):
            assert a_out[key] == a_src[key]
        k133 = np.concatenate(
            [np.array(a_src[f]).reshape(-1, 3) for f in FIELDS])
        k308 = np.array(a_out['goliath_wholebody_kpts']).reshape(308, 3)
        for i133, i308 in mapping.items():
            np.testing.assert_array_equal(k308[i308], k133[i133])
        assert not k308[unmapped].any()
        assert a_out['num_keypoints'] == int((k308[:, 2] > 0).sum())
        assert 'foot_kpts' not in a_out
    # named checks: wrists and a hand joint land where the 308 names say
    a_src, a_out = src['annotations'][0], out['annotations'][0]
    k308 = np.array(a_out['goliath_wholebody_kpts']).reshape(308, 3)
    np.testing.assert_array_equal(k308[names.index('left_wrist')],
                                  np.array(a_src['keypoints']).reshape(-1, 3)[9])
    np.testing.assert_array_equal(
        k308[names.index('right_thumb4')],
        np.array(a_src['righthand_kpts']).reshape(-1, 3)[4])
    assert a_out['num_keypoints'] > a_src['num_keypoints']  # hands + feet


def test_bad_input_errors(tool, tmp_path):
    out = str(tmp_path / 'o.json')
    proc = subprocess.run([sys.executable, SCRIPT, 'missing.json', out],
                          capture_output=True, text=True,
                          timeout=subprocess_budget(10))
    assert proc.returncode == 2 and 'does not exist' in proc.stderr
    coco17 = osp.join(COCO_DIR, 'test_coco.json')
    proc = subprocess.run([sys.executable, SCRIPT, coco17, out],
                          capture_output=True, text=True,
                          timeout=subprocess_budget(10))
    assert proc.returncode == 2
    assert "no 'foot_kpts': the input is not COCO-WholeBody" in proc.stderr
    with pytest.raises(ValueError, match='not a COCO annotation file'):
        tool.convert([1, 2])
    with open(SRC) as f:
        data = json.load(f)
    data['annotations'][0]['face_kpts'] = [0] * 10
    with pytest.raises(ValueError, match="'face_kpts' has 10 values, "
                       'expected 204'):
        tool.convert(data)
    bad = tmp_path / 'bad.json'
    bad.write_text('{not json')
    with pytest.raises(SystemExit):
        tool.main([str(bad), out])
