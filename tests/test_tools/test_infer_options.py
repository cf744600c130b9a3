"""tools/infer.py without a checkpoint says so loudly and records it, and
--cfg-options reaches the model (issue 18, item 14)."""
import json
import os.path as osp
import subprocess
import sys

import cv2
import infer
import pytest
import torch

from tests.conftest import COCO_DIR, REPO_DIR, subprocess_budget
from tests.test_apis.tiny_configs import tiny_config

INFER = osp.join(REPO_DIR, 'tools', 'infer.py')


# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture
def photo_dir(tmp_path):
    folder = tmp_path / 'in'
    folder.mkdir()
    img = cv2.imread(osp.join(COCO_DIR, '000000040083.jpg'))
    cv2.imwrite(str(folder / 'a.jpg'), cv2.resize(img, (64, 48)))
    return folder


def _header(out):
    with open(out / 'inference_index.jsonl') as f:
        return json.loads(f.readline())


def test_random_weights_are_warned_and_recorded(photo_dir, tmp_path, capsys):
    out = tmp_path / 'out'
    assert infer.main(['seg', tiny_config('seg'), '--input', str(photo_dir),
                       '--output', str(out), '--serial']) == 0
    log = capsys.readouterr().out
    # at the start and again in the summary
    assert log.count('WARNING: no CHECKPOINT was given') == 2
    assert 'RANDOM weights' in log
    assert _header(out)['weights'] == 'random'
    assert _header(out)['checkpoint'] is None


def test_a_checkpoint_run_records_no_random_weights(photo_dir, tmp_path,
                                                    capsys):
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    model = MODELS.build(Config.fromfile(tiny_config('seg')).model)
    ckpt = str(tmp_path / 'seg.pth')
    torch.save({'state_dict': model.state_dict()}, ckpt)
    out = tmp_path / 'out'
    assert infer.main(['seg', tiny_config('seg'), ckpt, '--input',
                       str(photo_dir), '--output', str(out),
                       '--serial']) == 0
    assert 'RANDOM' not in capsys.readouterr().out
    assert 'weights' not in _header(out)


def test_cfg_options_reach_the_model_and_the_index(photo_dir, tmp_path):
    """Every predicted scale (far below 1e6) is clamped to min_scale = 1e6,
    so each frame's canonical scale reads 1e6: the override was applied."""
    out = tmp_path / 'out'
    options = ['--cfg-options', 'model.decode_head.scale_guard=clamp',
               'model.decode_head.min_scale=1000000.0']
    assert infer.main(['pointmap', tiny_config('pointmap'), '--input',
                       str(photo_dir), '--output', str(out), '--serial',
                       '--no-vis', *options]) == 0
    with open(out / 'pointmap_cameras.json') as f:
        frames = json.load(f)['frames']
    assert [f['canonical_scale'] for f in frames] == [1e6]
    assert _header(out)['cfg_options'] == {
        'model.decode_head.min_scale': 1e6,
        'model.decode_head.scale_guard': 'clamp'}
    # the same folder with other overrides: refused, as other settings are
    with pytest.raises(FileExistsError, match='cfg_options'):
        infer.main(['pointmap', tiny_config('pointmap'), '--input',
                    str(photo_dir), '--output', str(out), '--serial',
                    '--no-vis', '--cfg-options',
                    'model.decode_head.scale_guard=clamp'])


def test_unknown_cfg_option_is_one_error_line(photo_dir, tmp_path):
    proc = subprocess.run(
        [sys.executable, INFER, 'seg', tiny_config('seg'), '--input',
         str(photo_dir), '--output', str(tmp_path / 'out'), '--cfg-options',
         'model.decode_head.num_clases=3'],
        capture_output=True, text=True, cwd=REPO_DIR,
        timeout=subprocess_budget(10))
    assert proc.returncode == 1
    assert proc.stderr.startswith('error: ') and 'num_clases' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_seg_legend_and_no_legend(photo_dir, tmp_path):
    """The class key under seg drawings; --no-legend draws the official
    [image | overlay] only."""
    from sapiens2_mm.metainfo.seg29 import seg29_metainfo
    from sapiens2_mm.visualization.legends import class_legend
    meta = seg29_metainfo()
    key = class_legend(128, meta['classes'], meta['palette'])
    for extra, rows in (([], 48 + key.shape[0]), (['--no-legend'], 48)):
        out = tmp_path / f'out{len(extra)}'
        assert infer.main(['seg', tiny_config('seg'), '--input',
                           str(photo_dir), '--output', str(out), '--serial',
                           *extra]) == 0
        drawing = cv2.imread(str(out / 'a.jpg'))
        assert drawing.shape[:2] == (rows, 128)
