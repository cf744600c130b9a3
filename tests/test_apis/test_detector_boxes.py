"""Person boxes from an mmdet detector on mmcv-lite (random-weight RTMDet)."""
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.registry import DefaultScope

from sapiens2_mm.apis import DetectorBoxes, Frame
from tests.conftest import DATA_DIR


@pytest.fixture(scope='module')
def rtmdet_tiny():
    import mmdet
    cfg = osp.join(osp.dirname(mmdet.__file__), '.mim', 'configs', 'rtmdet',
                   'rtmdet_tiny_8xb32-300e_coco.py')
    if not osp.isfile(cfg):
        pytest.skip('mmdet package configs (.mim) not installed')
    return cfg


def test_detector_boxes_threshold_nms_and_fallback(rtmdet_tiny):
    torch.manual_seed(0)
    det = DetectorBoxes(rtmdet_tiny, None, bbox_thr=0.0, nms_thr=0.3)
    assert DefaultScope.get_current_instance().scope_name == 'sapiens2_mm'
    image = cv2.imread(osp.join(DATA_DIR, 'coco_sample', '000000040083.jpg'))
    frame = Frame('a.jpg', image)
    boxes = det(frame)
    assert DefaultScope.get_current_instance().scope_name == 'sapiens2_mm'
    assert boxes.ndim == 2 and boxes.shape[1] == 5 and len(boxes) >= 1
    assert (boxes[:, 4] > 0).all()
    assert np.all(np.diff(boxes[:, 4]) <= 0)  # NMS keeps score order
    from torchvision.ops import box_iou
    iou = box_iou(torch.from_numpy(boxes[:, :4]),
                  torch.from_numpy(boxes[:, :4]))
    assert (iou.fill_diagonal_(0) <= 0.3 + 1e-6).all()
    det.bbox_thr = 1.1  # nothing passes: the whole image, as the official demo
    h, w = image.shape[:2]
    np.testing.assert_array_equal(det(frame), [[0, 0, w - 1, h - 1, 1]])


def test_detector_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match='Detector config'):
        DetectorBoxes(str(tmp_path / 'det.py'))
