"""Person boxes from an mmdet detector on mmcv-lite (random-weight RTMDet)."""
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.registry import DefaultScope

from sapiens2_mm.apis import DetectorBoxes, Frame
from tests.conftest import COCO_DIR


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
    image = cv2.imread(osp.join(COCO_DIR, '000000040083.jpg'))
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


def test_detector_checkpoint_errors_name_the_files(rtmdet_tiny, tmp_path,
                                                   parity_file):
    """Issue 18: an unreadable --det-checkpoint ended in an UnpicklingError
    traceback, and the weights of another model were 'loaded' with a warning
    (a random detector ran). Both are ValueErrors naming the file now."""
    bad = tmp_path / 'bad.pth'
    bad.write_bytes(b'not a checkpoint')
    with pytest.raises(ValueError, match='Could not read checkpoint'):
        DetectorBoxes(rtmdet_tiny, str(bad))
    other = parity_file('tiny18_seg.safetensors')
    with pytest.raises(ValueError, match=r'does not fit the detector of '
                       r"--det-config .*missing in checkpoint \(\d+\); "
                       r'unexpected in checkpoint \(\d+\)'):
        DetectorBoxes(rtmdet_tiny, other)


def test_detector_checkpoint_of_its_config_loads_exactly(rtmdet_tiny,
                                                         tmp_path):
    torch.manual_seed(1)
    source = DetectorBoxes(rtmdet_tiny, None)
    weights = {k: v.clone() for k, v in source.model.state_dict().items()}
    path = tmp_path / 'rtmdet_tiny.pth'
    torch.save({'meta': {}, 'state_dict': weights}, path)
    torch.manual_seed(2)  # another random init, overwritten by the load
    loaded = DetectorBoxes(rtmdet_tiny, str(path))
    for key, value in loaded.model.state_dict().items():
        assert torch.equal(value, weights[key]), key
