"""tools/analysis_tools/show_reconstructions.py on the tiny pretraining
config: legible [masked | reconstruction | input] panels of user photos."""
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from tests.conftest import PHOTO, REPO_DIR, load_tool

CONFIG = osp.join(REPO_DIR, 'configs', 'pretrain',
                  'sapiens2-tiny_pretrain-cpu-64x48.py')


def _tool():
    return load_tool('analysis_tools/show_reconstructions')


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(CONFIG).model)
    path = tmp_path_factory.mktemp('ckpt') / 'iter_40.pth'
    torch.save({'meta': {}, 'state_dict': model.state_dict()}, path)
    return str(path)


def test_panels_are_legible_and_show_the_masked_photo(checkpoint, tmp_path,
                                                      capsys):
    photos = tmp_path / 'photos'
    photos.mkdir()
    shutil.copy(PHOTO, photos / 'me.jpg')
    (photos / 'broken.jpg').write_bytes(b'not an image')
    out = tmp_path / 'out'
    tool = _tool()
    written = tool.main([CONFIG, checkpoint, '--input', str(photos),
                         '--output-dir', str(out)])
    assert written == [str(out / 'me_reconstruction.png')]
    printed = capsys.readouterr().out
    assert 'hidden-patch MSE' in printed and 'broken.jpg (unreadable)' in \
        printed
    drawing = cv2.imread(written[0])
    h, w = 64, 48  # the tiny config's global crop
    factor = 8  # 64 px enlarged to >= 512 px (--min-height default)
    title, gap = tool.TITLE_HEIGHT, 4
    assert drawing.shape == (title + h * factor, 3 * w * factor + 2 * gap, 3)
    panel = [drawing[title::factor, x * (w * factor + gap):][:, :w * factor:
                                                              factor]
             for x in range(3)]
    # the input panel is the photo scaled to cover 64x48 and centre-cropped
    image = cv2.imread(PHOTO)
    scale = max(h / image.shape[0], w / image.shape[1])
    size = (round(image.shape[1] * scale), round(image.shape[0] * scale))
    resized = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    top, left = (size[1] - h) // 2, (size[0] - w) // 2
    np.testing.assert_array_equal(panel[2], resized[top:top + h,
                                                    left:left + w])
    # 16 px patches: 4 x 3 grid; mask_ratio 0.5 of the config hides 6
    grey = np.all(panel[0] == 128, axis=-1).reshape(4, 16, 3, 16)
    hidden = grey.all(axis=(1, 3))
    assert hidden.sum() == 6
    # visible patches of the reconstruction are the input's
    for i, j in zip(*np.nonzero(~hidden)):
        block = np.s_[16 * i:16 * (i + 1), 16 * j:16 * (j + 1)]
        np.testing.assert_array_equal(panel[1][block], panel[2][block])
    # a second run never overwrites
    before = drawing.copy()
    tool.main([CONFIG, checkpoint, '--input', str(photos / 'me.jpg'),
               '--output-dir', str(out), '--seed', '1'])
    assert 'exists' in capsys.readouterr().out
    np.testing.assert_array_equal(cv2.imread(written[0]), before)


def test_refusals_are_one_error_line(checkpoint, tmp_path):
    from sapiens2_mm.utils.pretrain_export import export_pretrain
    tool = _tool()
    exported = str(tmp_path / 'backbone.safetensors')
    export_pretrain(checkpoint, exported)
    with pytest.raises(SystemExit, match='^error: .* holds no pixel decoder'):
        tool.main([CONFIG, exported, '--input', PHOTO, '--output-dir',
                   str(tmp_path / 'o')])
    with pytest.raises(SystemExit,
                       match=r'^error: .* is \(inside\) the input folder'):
        tool.main([CONFIG, checkpoint, '--input', osp.dirname(PHOTO),
                   '--output-dir', osp.dirname(PHOTO)])
    seg = osp.join(REPO_DIR, 'configs', 'seg',
                   'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
    with pytest.raises(SystemExit, match='^error: .* not a Sapiens2Pretrainer'):
        tool.main([seg, checkpoint, '--input', PHOTO, '--output-dir',
                   str(tmp_path / 'o')])
