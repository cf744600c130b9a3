"""Pose and seg inferencers against independent reference computations."""
import json
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sapiens2_mm.apis import (
    BoxFile,
    PoseInferencer,
    SegInferencer,
    build_inferencer,
    init_model,
)
from tests.conftest import COCO_DIR
from tests.test_apis.tiny_configs import coco_sample_boxes, tiny_config, tiny_model

POSE_CFG = tiny_config('pose')
SEG_CFG = tiny_config('seg')
IMAGES = ['000000040083.jpg', '000000197388.jpg']


@pytest.fixture(scope='module')
def pose_model():
    torch.manual_seed(0)
    return init_model(POSE_CFG)


@pytest.fixture(scope='module')
def seg_model():
    torch.manual_seed(0)
    return init_model(SEG_CFG)


@pytest.mark.parametrize('flip_test', [False, True])
def test_pose_matches_mmpose_inference_topdown(pose_model, tmp_path,
                                               flip_test):
    from mmpose.apis import inference_topdown
    boxes = coco_sample_boxes()
    box_file = tmp_path / 'boxes.json'
    box_file.write_text(json.dumps({n: boxes[n] for n in IMAGES}))
    inferencer = PoseInferencer(pose_model, batch_size=3, flip_test=flip_test,
                                boxes=BoxFile(str(box_file)))
    results = inferencer([osp.join(COCO_DIR, n) for n in IMAGES])
    assert [r.name for r in results] == IMAGES
    for result in results:
        ref = inference_topdown(pose_model, osp.join(COCO_DIR, result.name),
                                np.array(boxes[result.name]))
        ref_kpts = np.concatenate([r.pred_instances.keypoints for r in ref])
        ref_scores = np.concatenate(
            [r.pred_instances.keypoint_scores for r in ref])
        assert result.keypoints.shape == (len(ref), 17, 2)
        # Crops are batched differently (3 per batch across images vs all
        # boxes of one image), so GEMM sums differ at ~1e-7 relative; the
        # DARK Newton step on nearly flat random-weight heatmaps amplifies
        # that to a few 1e-3 px, to 0.0126 px (7e-5 relative) on one
        # keypoint with flip test since the boxes are clipped to the image
        # as mmpose clips them (issue 29), and to 0.012 px without flip
        # under other CPU kernels (ATen AVX2, numpy without AVX-512, OpenCV
        # without AVX2 / FMA3). A wrong crop mapping or flip is off by pixels.
        np.testing.assert_allclose(result.keypoints, ref_kpts, atol=5e-2)
        np.testing.assert_allclose(result.keypoint_scores, ref_scores,
                                   atol=1e-5)
        np.testing.assert_allclose(result.bboxes, boxes[result.name],
                                   rtol=1e-6)


def test_pose_crop_to_image_mapping(pose_model):
    """Official crop mapping: kp_img = kp / input_size * scale + center - scale / 2,
    computed here from the raw heatmaps and the codec's crop decode."""
    image = cv2.imread(osp.join(COCO_DIR, IMAGES[0]))
    box = np.array([40.0, 100.0, 220.0, 300.0, 1.0], np.float32)
    inferencer = PoseInferencer(pose_model, flip_test=False,
                                boxes=lambda frame: box[None])
    result = inferencer(image)[0]
    data = inferencer.crop(next(iter(inferencer.reader)), box)
    inputs = pose_model.data_preprocessor(
        dict(inputs=[data['inputs']], data_samples=[data['data_samples']]),
        False)['inputs']
    with torch.no_grad():
        heatmaps = pose_model(inputs, None, mode='tensor')[0].numpy()
    crop_kpts, crop_scores = pose_model.head.decoder.decode(heatmaps)
    meta = data['data_samples'].metainfo
    center, scale = meta['input_center'], meta['input_scale']
    input_size = np.array(meta['input_size'], np.float32)
    expected = crop_kpts[0] / input_size * scale + center - 0.5 * scale
    # input_scale is the padded (x1.25) box with the 3:4 aspect fix
    w, h = 180 * 1.25, 200 * 1.25
    np.testing.assert_allclose(scale, [max(w, h * 0.75), max(h, w / 0.75)],
                               rtol=1e-5)
    np.testing.assert_allclose(center, [130.0, 200.0], rtol=1e-6)
    np.testing.assert_allclose(result.keypoints[0], expected, atol=1e-3)
    np.testing.assert_allclose(result.keypoint_scores[0], crop_scores[0],
                               atol=1e-6)


def test_pose_whole_image_default(pose_model):
    image = cv2.imread(osp.join(COCO_DIR, IMAGES[1]))
    result = build_inferencer(pose_model)(image)[0]
    h, w = image.shape[:2]
    np.testing.assert_array_equal(result.bboxes, [[0, 0, w - 1, h - 1]])
    assert result.image_size == (h, w)


def _seg_reference(model, image):
    """Official seg demo steps written out: resize (area/cubic) to the network
    size, ImageNet-normalize RGB, forward, bilinear back, argmax."""
    from sapiens2_mm.datasets.seg.transforms.resize import resize_image
    h_net, w_net = 128, 96
    x = resize_image(image, h_net, w_net)[..., ::-1].astype(np.float32)
    x = (x - [123.675, 116.28, 103.53]) / [58.395, 57.12, 57.375]
    x = torch.from_numpy(x.transpose(2, 0, 1).copy()).float()[None]
    with torch.no_grad():
        logits = model(x, None, mode='tensor')
    logits = F.interpolate(logits, size=image.shape[:2], mode='bilinear',
                           align_corners=False)[0]
    return logits


def test_seg_matches_reference_steps(seg_model):
    images = [cv2.imread(osp.join(COCO_DIR, n)) for n in IMAGES]
    results = SegInferencer(seg_model, batch_size=2)(images)
    for image, result in zip(images, results):
        ref = _seg_reference(seg_model, image)
        assert result.label_map.shape == image.shape[:2]
        assert result.label_map.dtype == np.uint8
        top2 = ref.topk(2, dim=0).values
        decided = (top2[0] - top2[1]).numpy() > 1e-4  # ignore exact ties
        np.testing.assert_array_equal(result.label_map[decided],
                                      ref.argmax(0).numpy()[decided])
        assert decided.mean() > 0.99


def test_seg_flip_test_is_mirror_equivariant(seg_model):
    """Flip test averages a view and its mirror with left/right swapped, so
    mirroring the input mirrors the labels and swaps left/right exactly."""
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (128, 96, 3), dtype=np.uint8)
    inferencer = SegInferencer(seg_model, flip_test=True)
    plain, mirrored = inferencer([image, np.ascontiguousarray(image[:, ::-1])])
    swap = np.arange(29)
    for a, b in seg_model.dataset_meta['flip_swap_pairs']:
        swap[a], swap[b] = b, a
    np.testing.assert_array_equal(mirrored.label_map,
                                  swap[plain.label_map[:, ::-1]])
    no_flip = SegInferencer(seg_model, flip_test=False)([image])[0]
    assert (no_flip.label_map != plain.label_map).any()


def test_wrong_task_and_unknown_task(seg_model):
    with pytest.raises(ValueError, match="runs 'pose' models"):
        PoseInferencer(seg_model)
    with pytest.raises(ValueError,
                       match=r"Unknown task 'no_such_task'; registered tasks"):
        build_inferencer(seg_model, task='no_such_task')


@pytest.mark.parametrize('task', ['pose', 'seg', 'normal', 'pointmap',
                                  'albedo'])
def test_every_inferencer_takes_compile_and_dtype(task, monkeypatch):
    """``compile`` / ``dtype`` reach the speed-ups for every task (the dense
    inferencers once lacked them)."""
    import sapiens2_mm.runtime.speedups as speedups
    calls = []
    monkeypatch.setattr(speedups, 'apply_speedups',
                        lambda model, **kw: calls.append(kw))
    model = tiny_model(task)
    calls.clear()
    inferencer = build_inferencer(model, batch_size=2, compile=True,
                                  dtype='bf16')
    assert calls == [dict(compile=True, dtype='bf16')]
    assert inferencer.batch_size == 2
