"""init_model, the inferencers and benchmark_inference on stock mmpose /
mmseg configs (configs/baselines/): mmpose's HeatmapHead through its own
predict path, an mmseg segmentor found as a seg model without task=."""
import json
import os.path as osp
import subprocess
import sys

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmengine.config import Config

from sapiens2_mm.apis import (
    BoxFile,
    PoseInferencer,
    SegInferencer,
    find_task,
    init_model,
)
from tests.conftest import DATA_DIR, REPO_DIR
from tests.test_apis.tiny_configs import coco_sample_boxes

BASELINES = osp.join(REPO_DIR, 'configs', 'baselines')
RES18 = osp.join(BASELINES, 'pose', 'td-hm_res18_1xb12-300_cocosample-128x96.py')
SEGFORMER = osp.join(BASELINES, 'seg',
                     'segformer_mit-b0_1xb2-30_seg29sample-128x96.py')
COCO = osp.join(DATA_DIR, 'coco_sample')
IMAGES = ['000000040083.jpg', '000000197388.jpg']


@pytest.fixture(scope='module')
def res18():
    torch.manual_seed(0)
    return init_model(RES18)


@pytest.fixture(scope='module')
def segformer():
    torch.manual_seed(0)
    return init_model(SEGFORMER)


def test_stock_configs_are_found_as_their_task():
    assert find_task(Config.fromfile(RES18)).name == 'pose'
    assert find_task(Config.fromfile(SEGFORMER)).name == 'seg'


@pytest.mark.parametrize('flip_test', [False, True])
def test_mmpose_head_matches_mmpose_inference_topdown(res18, tmp_path,
                                                      flip_test):
    """mmpose's HeatmapHead has no predict_heatmaps: its own predict runs
    (flip with the config's shift_heatmap=True); the keypoints equal
    mmpose.apis.inference_topdown's."""
    from mmpose.apis import inference_topdown
    assert not hasattr(res18.head, 'predict_heatmaps')
    assert res18.cfg.model.test_cfg.shift_heatmap is True
    boxes = coco_sample_boxes()
    box_file = tmp_path / 'boxes.json'
    box_file.write_text(json.dumps({n: boxes[n] for n in IMAGES}))
    inferencer = PoseInferencer(res18, batch_size=3, flip_test=flip_test,
                                boxes=BoxFile(str(box_file)))
    results = inferencer([osp.join(COCO, n) for n in IMAGES])
    for result in results:
        ref = inference_topdown(res18, osp.join(COCO, result.name),
                                np.array(boxes[result.name]))
        assert result.keypoints.shape == (len(ref), 17, 2)
        # other batching: float sums differ at ~1e-7 relative
        np.testing.assert_allclose(
            result.keypoints,
            np.concatenate([r.pred_instances.keypoints for r in ref]),
            atol=1e-3)
        np.testing.assert_allclose(
            result.keypoint_scores,
            np.concatenate([r.pred_instances.keypoint_scores for r in ref]),
            atol=1e-5)


def test_mmseg_segmentor_matches_its_steps(segformer):
    """SegFormer's logits (1/4 of the input) go up to the network size as
    mmseg's decode head does, then to the photo, then argmax."""
    from sapiens2_mm.datasets.seg.transforms.resize import resize_image
    images = [cv2.imread(osp.join(COCO, n)) for n in IMAGES]
    results = SegInferencer(segformer, batch_size=2)(images)
    for image, result in zip(images, results):
        x = resize_image(image, 128, 96)[..., ::-1].astype(np.float32)
        x = (x - [123.675, 116.28, 103.53]) / [58.395, 57.12, 57.375]
        x = torch.from_numpy(x.transpose(2, 0, 1).copy()).float()[None]
        with torch.no_grad():
            logits = segformer(x, None, mode='tensor')
        assert logits.shape[-2:] == (32, 24)
        logits = F.interpolate(logits, (128, 96), mode='bilinear')
        logits = F.interpolate(logits, image.shape[:2], mode='bilinear')[0]
        top2 = logits.topk(2, dim=0).values
        decided = (top2[0] - top2[1]).numpy() > 1e-4  # ignore exact ties
        assert decided.mean() > 0.99
        np.testing.assert_array_equal(result.label_map[decided],
                                      logits.argmax(0).numpy()[decided])


@pytest.mark.parametrize('config,inputs', [
    (RES18, 'tests/data/coco_sample'),
    (SEGFORMER, 'tests/data/seg_sample/images')])
def test_benchmark_inference_runs_stock_configs(config, inputs):
    script = osp.join(REPO_DIR, 'tools', 'analysis_tools',
                      'benchmark_inference.py')
    done = subprocess.run(
        [sys.executable, script, config, '--input', inputs, '--repeat', '1',
         '--rounds', '1', '--dtypes', 'fp32', '--gemm-size', '64',
         '--skip-e2e'], cwd=REPO_DIR, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'model-only eager    fp32' in done.stdout
    assert '4 images' in done.stdout


def test_infer_cli_runs_a_stock_pose_config(tmp_path):
    """tools/infer.py pose on the SimpleBaseline config (the command of
    docs/baselines.md, with a random-weight checkpoint)."""
    from sapiens2_mm.apis.model_compare import build_timed_model
    ckpt = str(tmp_path / 'res18.pth')
    torch.save({'state_dict': build_timed_model(
        Config.fromfile(RES18), 'cpu').state_dict()}, ckpt)
    out = tmp_path / 'out'
    done = subprocess.run(
        [sys.executable, osp.join(REPO_DIR, 'tools', 'infer.py'), 'pose',
         RES18, ckpt, '--input', COCO, '--output', str(out), '--bboxes',
         osp.join(COCO, 'test_coco.json')],
        cwd=REPO_DIR, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (predictions, ) = out.glob('*_predictions.json')
    result = json.loads(predictions.read_text())
    assert result['num_keypoints'] == 17 and len(result['frames']) == 4
    # one instance per person box of the file (14 people in 4 photos)
    assert sum(len(f['instances']) for f in result['frames']) == 14
