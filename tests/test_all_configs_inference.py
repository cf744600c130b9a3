"""Every shipped config runs through the documented inference and test paths.

Each config in configs/ gets a tiny-architecture variant (tests/tiny_variants:
same pipeline, codec, input size, metric and task, a 2-block backbone) and is
run through ``sapiens2_mm.apis.init_model``, ``tools/infer.py`` on a bundled
photo and ``tools/test.py`` on one batch of the bundled sample data (COCO
photos with COCO-17 / WholeBody annotations, the WholeBody sample converted to
308 keypoints, the body-part seg sample).
"""
import os.path as osp
import sys

import cv2
import numpy as np
import pytest

from tests.conftest import REPO_DIR
from tests.tiny_variants import (
    PHOTO,
    SHIPPED,
    random_checkpoint,
    read_json,
    task_of,
    tiny_variant,
)

sys.path.insert(0, osp.join(REPO_DIR, 'tools'))
import infer  # noqa: E402
import test as test_tool  # noqa: E402

IDS = [osp.relpath(p, REPO_DIR) for p in SHIPPED]
NUM_KEYPOINTS = {'coco': 17, 'coco-wholebody': 133, 'sapiens308': 308}


def expected_keypoints(config):
    name = osp.basename(config)
    for layout in ('coco-wholebody', 'sapiens308'):
        if layout in name:
            return NUM_KEYPOINTS[layout]
    return 17


def test_every_task_and_size_is_covered():
    assert len(SHIPPED) >= 13
    assert {task_of(p) for p in SHIPPED} == {'pose', 'seg'}


@pytest.mark.parametrize('config', SHIPPED, ids=IDS)
def test_init_model(config, tmp_path):
    from sapiens2_mm.apis import init_model
    model = init_model(tiny_variant(config, str(tmp_path)))
    assert model.task == task_of(config)
    if model.task == 'pose':
        assert model.dataset_meta['num_keypoints'] == expected_keypoints(config)
        assert len(model.dataset_meta['flip_indices']) == expected_keypoints(
            config)
    else:
        assert len(model.dataset_meta['classes']) == 29


@pytest.mark.parametrize('config', SHIPPED, ids=IDS)
def test_infer_cli_on_a_bundled_photo(config, tmp_path):
    out = tmp_path / 'out'
    task = task_of(config)
    rc = infer.main([task, tiny_variant(config, str(tmp_path)), '--input',
                     PHOTO, '--output', str(out)])
    assert rc == 0
    stem = osp.splitext(osp.basename(PHOTO))[0]
    assert (out / osp.basename(PHOTO)).is_file()  # the visualisation
    if task == 'pose':
        data = read_json(out / 'out_predictions.json')
        assert data['num_keypoints'] == expected_keypoints(config)
        (frame, ) = data['frames']
        (person, ) = frame['instances']  # the whole-image box
        assert len(person['keypoints']) == expected_keypoints(config)
    else:
        label = np.load(out / f'{stem}_seg.npy')
        assert label.shape == cv2.imread(PHOTO).shape[:2]  # original size
        assert 0 <= label.min() and label.max() < 29


@pytest.mark.parametrize('config', SHIPPED, ids=IDS)
def test_test_tool_on_one_sample_batch(config, tmp_path):
    tiny = tiny_variant(config, str(tmp_path), with_test_data=True)
    ckpt = random_checkpoint(tiny, str(tmp_path / 'random.pth'))
    name = osp.splitext(osp.basename(config))[0].replace('.', '_')
    metrics = test_tool.main([tiny, ckpt, '--work-dir', str(tmp_path / 'w'),
                              '--cfg-options', f'experiment_name=all_{name}'])
    key = 'mIoU' if task_of(config) == 'seg' else 'AP'
    assert any(k.endswith(key) for k in metrics), metrics
    assert osp.isfile(tmp_path / 'w' / 'test_metrics.json')
