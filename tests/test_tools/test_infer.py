"""tools/infer.py end to end: every output format is read back."""
import json
import os
import os.path as osp
import shutil
import subprocess
import sys

import cv2
import numpy as np
import pytest

from tests.conftest import DATA_DIR, REPO_DIR
from tests.test_apis.tiny_configs import tiny_config

sys.path.insert(0, osp.join(REPO_DIR, 'tools'))
import infer  # noqa: E402

COCO = osp.join(DATA_DIR, 'coco_sample')


@pytest.fixture
def inputs(tmp_path):
    """Two small images, an unreadable file and a 3-frame video."""
    folder = tmp_path / 'in'
    folder.mkdir()
    for name in ('000000040083.jpg', '000000197388.jpg'):
        img = cv2.imread(osp.join(COCO, name))
        cv2.imwrite(str(folder / name), cv2.resize(img, (160, 120)))
    (folder / 'broken.jpg').write_bytes(b'\xff\xd8 truncated')
    writer = cv2.VideoWriter(str(folder / 'clip.mp4'),
                             cv2.VideoWriter_fourcc(*'mp4v'), 4.0, (96, 128))
    for i in range(3):
        writer.write(np.full((128, 96, 3), 60 * i, np.uint8))
    writer.release()
    return folder


def test_pose_outputs_read_back(inputs, tmp_path, capsys):
    out = tmp_path / 'run_output'
    boxes = tmp_path / 'boxes.json'
    boxes.write_text(json.dumps({'000000040083.jpg': [[10, 20, 80, 110, 0.9],
                                                      [90, 10, 150, 100]],
                                 '000000197388.jpg': []}))
    rc = infer.main(['pose', tiny_config('pose'), '--input', str(inputs),
                     '--output', str(out), '--bboxes', str(boxes),
                     '--batch-size', '2', '--flip-test'])
    assert rc == 0
    log = capsys.readouterr().out
    assert 'skipped 1 unreadable input(s)' in log and 'broken.jpg' in log
    # official naming: "<parent>_predictions.json" for a "*_output" folder
    with open(out / f'{tmp_path.name}_predictions.json') as f:
        data = json.load(f)
    assert data['num_keypoints'] == 17 and data['kpt_thr_used'] == 0.3
    frames = {fr['image_name']: fr for fr in data['frames']}
    assert sorted(frames) == ['000000040083.jpg', '000000197388.jpg',
                              'clip_000000.jpg', 'clip_000001.jpg',
                              'clip_000002.jpg']
    two = frames['000000040083.jpg']
    assert two['image_size'] == [120, 160]
    assert [ins['bbox'] for ins in two['instances']] == [[10, 20, 80, 110],
                                                          [90, 10, 150, 100]]
    assert two['instances'][0]['bbox_score'] == pytest.approx(0.9)
    kpts = np.array(two['instances'][0]['keypoints'])
    assert kpts.shape == (17, 2) and np.isfinite(kpts).all()
    assert len(two['instances'][0]['keypoint_scores']) == 17
    assert frames['000000197388.jpg']['instances'] == []  # nobody listed
    # frames missing from the bbox file use the whole image, [0, 0, w-1, h-1]
    # as the official demo
    assert frames['clip_000001.jpg']['instances'][0]['bbox'] == [0, 0, 95,
                                                                 127]
    vis = cv2.imread(str(out / '000000040083.jpg'))
    assert vis.shape == (120, 160, 3)
    cap = cv2.VideoCapture(str(out / 'clip.mp4'))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
    ok, frame = cap.read()
    assert ok and frame.shape == (128, 96, 3)
    cap.release()
    # the keypoint JSON is accepted back as a bbox file
    from sapiens2_mm.apis import BoxFile
    again = BoxFile(str(out / f'{tmp_path.name}_predictions.json'))
    np.testing.assert_allclose(again.boxes['000000040083.jpg'][:, :4],
                               [[10, 20, 80, 110], [90, 10, 150, 100]])


def test_seg_outputs_read_back(inputs, tmp_path):
    out = tmp_path / 'seg'
    rc = infer.main(['seg', tiny_config('seg'), '--input',
                     str(inputs / '000000040083.jpg'), str(inputs / 'clip.mp4'),
                     '--output', str(out), '--batch-size', '3'])
    assert rc == 0
    labels = np.load(out / '000000040083_seg.npy')
    assert labels.shape == (120, 160) and labels.dtype == np.uint8
    assert labels.min() >= 0 and labels.max() < 29
    assert len([n for n in os.listdir(out) if n.startswith('clip_')]) == 3
    vis = cv2.imread(str(out / '000000040083.jpg'))
    assert vis.shape == (120, 320, 3)  # [image | overlay]
    image = cv2.imread(str(inputs / '000000040083.jpg')).astype(int)
    # left half is the (re-encoded) input itself
    assert np.abs(vis[:, :160].astype(int) - image).mean() < 3


def test_bad_arguments(tmp_path, inputs):
    with pytest.raises(FileNotFoundError, match='Config file not found'):
        infer.main(['pose', str(tmp_path / 'no.py'), '--input', str(inputs),
                    '--output', str(tmp_path / 'o')])
    with pytest.raises(FileNotFoundError, match='missing.pth'):
        infer.main(['seg', tiny_config('seg'), str(tmp_path / 'missing.pth'),
                    '--input', str(inputs), '--output', str(tmp_path / 'o')])
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    with pytest.raises(NotADirectoryError, match='not a folder'):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', str(blocker)])
    with pytest.raises(FileNotFoundError, match='does not exist'):
        infer.main(['seg', tiny_config('seg'), '--input',
                    str(tmp_path / 'nothing'), '--output', str(tmp_path / 'o')])


def test_unwritable_output(inputs):
    # /proc refuses new folders even for root (tests run as root here, so a
    # chmod'ed folder would not do).
    with pytest.raises(PermissionError, match='Cannot write to output'):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', '/proc/sapiens2_no_such_dir/out'])


def test_cli_error_message_and_exit_code(tmp_path):
    proc = subprocess.run(
        [sys.executable, 'tools/infer.py', 'pose', 'configs/nope.py',
         '--input', COCO, '--output', str(tmp_path)], cwd=REPO_DIR,
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "error: Config file not found: 'configs/nope.py'" in proc.stderr
    shutil.rmtree(tmp_path, ignore_errors=True)
