"""The two run-time fixes: mmcv-lite ops and weights-only torch.load."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from sapiens2_mm.utils import MissingCompiledOpError, install_mmcv_ext_fallback

needs_lite = pytest.mark.skipif(not install_mmcv_ext_fallback(),
                                reason='full mmcv installed: nothing is patched')


def reference_nms(boxes, scores, threshold, offset=0):
    """Greedy NMS written out, independent of torchvision."""
    order = scores.argsort(descending=True).tolist()
    keep = []
    while order:
        i = order.pop(0)
        keep.append(i)
        rest = []
        for j in order:
            x1 = max(boxes[i, 0], boxes[j, 0])
            y1 = max(boxes[i, 1], boxes[j, 1])
            x2 = min(boxes[i, 2], boxes[j, 2])
            y2 = min(boxes[i, 3], boxes[j, 3])
            inter = max(0., x2 - x1 + offset) * max(0., y2 - y1 + offset)
            area = lambda b: (b[2] - b[0] + offset) * (b[3] - b[1] + offset)
            iou = inter / (area(boxes[i]) + area(boxes[j]) - inter)
            if iou <= threshold:
                rest.append(j)
        order = rest
    return keep


@needs_lite
@pytest.mark.parametrize('offset', [0, 1])
def test_mmcv_nms_runs_on_torchvision(offset):
    from mmcv.ops import nms
    gen = torch.Generator().manual_seed(0)
    xy = torch.rand(40, 2, generator=gen) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(40, 2, generator=gen) * 20], 1)
    scores = torch.rand(40, generator=gen)
    _, keep = nms(boxes, scores, 0.4, offset=offset)
    assert keep.tolist() == reference_nms(boxes.double(), scores, 0.4, offset)


@needs_lite
def test_mmcv_batched_nms_and_roi_align():
    from mmcv.ops import RoIAlign, batched_nms
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10.]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    _, keep = batched_nms(boxes, scores, torch.tensor([0, 0, 1]),
                          dict(type='nms', iou_threshold=0.5))
    assert sorted(keep.tolist()) == [0, 2]
    feats = torch.arange(64.).view(1, 1, 8, 8)
    rois = torch.tensor([[0, 0, 0, 4, 4.]])
    out = RoIAlign((2, 2), 1.0, sampling_ratio=1, aligned=True)(feats, rois)
    # aligned=True shifts the roi by -0.5 px: samples at y, x in {0.5, 2.5};
    # the feature is 8y + x, which bilinear sampling reproduces exactly.
    expected = torch.tensor([[[[4.5, 6.5], [20.5, 22.5]]]])
    torch.testing.assert_close(out, expected)


@needs_lite
def test_compiled_only_op_names_itself():
    from mmcv.ops import DeformConv2d
    conv = DeformConv2d(3, 3, 3)
    with pytest.raises(MissingCompiledOpError, match='deform_conv_forward'):
        conv(torch.zeros(1, 3, 8, 8), torch.zeros(1, 18, 6, 6))


def test_upstream_model_packages_import():
    code = ('import sapiens2_mm, mmpose.models, mmseg.models, mmpretrain.models, '
            'mmdet.models; print("ok")')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_backbone_import_stays_light():
    code = ('import sys, sapiens2_mm.models.backbones; '
            'print(sorted(m for m in sys.modules if m.split(".")[0] in '
            '("mmpose", "mmseg", "mmpretrain", "mmdet")))')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'


def test_mmengine_checkpoint_resumes_with_weights_only(tmp_path):
    from mmengine.logging import HistoryBuffer
    hub = HistoryBuffer()
    hub.update(np.float64(1.5))
    checkpoint = {
        'meta': {'seed': np.int64(3), 'dataset_meta': {
            'sigmas': np.array([0.1, 0.2], dtype=np.float32),
            'colors': np.zeros((2, 3), dtype=np.uint8)}},
        'message_hub': {'log_scalars': {'loss': hub}},
        'state_dict': {'w': torch.ones(2)},
    }
    torch.save(checkpoint, tmp_path / 'c.pth')
    loaded = torch.load(tmp_path / 'c.pth', weights_only=True)
    assert loaded['meta']['dataset_meta']['sigmas'][1] == np.float32(0.2)
    assert loaded['message_hub']['log_scalars']['loss'].mean() == 1.5


def test_weights_only_still_refuses_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ('pwned', ))

    torch.save({'x': Evil()}, tmp_path / 'evil.pth')
    with pytest.raises(Exception, match='Unsupported global|weights_only'):
        torch.load(tmp_path / 'evil.pth', weights_only=True)
