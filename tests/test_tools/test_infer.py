"""tools/infer.py end to end: every output format is read back."""
import json
import os
import os.path as osp
import shutil
import subprocess
import sys

import cv2
import infer
import numpy as np
import pytest
import torch

from tests.conftest import COCO_DIR, REPO_DIR, subprocess_budget
from tests.test_apis.tiny_configs import tiny_config


@pytest.fixture
def inputs(tmp_path):
    """Two small images, an unreadable file and a 3-frame video."""
    folder = tmp_path / 'in'
    folder.mkdir()
    for name in ('000000040083.jpg', '000000197388.jpg'):
        img = cv2.imread(osp.join(COCO_DIR, name))
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
    # the first frames are photos; the video is still named
    assert data['video'].endswith('clip.mp4')
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
                     '--output', str(out), '--batch-size', '3',
                     '--workers', '3'])
    assert rc == 0
    labels = np.load(out / '000000040083_seg.npy')
    assert labels.shape == (120, 160) and labels.dtype == np.uint8
    assert labels.min() >= 0 and labels.max() < 29
    assert len([n for n in os.listdir(out) if n.startswith('clip_')]) == 3
    # the video's drawing is one mp4 (docs/inference.md)
    cap = cv2.VideoCapture(str(out / 'clip.mp4'))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
    cap.release()
    vis = cv2.imread(str(out / '000000040083.jpg'))
    # [image | overlay] and the class key under it
    from sapiens2_mm.metainfo.seg29 import seg29_metainfo
    from sapiens2_mm.visualization.legends import class_legend
    meta = seg29_metainfo()
    key_rows = class_legend(320, meta['classes'], meta['palette']).shape[0]
    assert vis.shape == (120 + key_rows, 320, 3)
    image = cv2.imread(str(inputs / '000000040083.jpg')).astype(int)
    # left half is the (re-encoded) input itself
    assert np.abs(vis[:120, :160].astype(int) - image).mean() < 3


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
    with pytest.raises(ValueError, match=r'workers \(--workers\) must be '
                       r'an integer >= 1, got 0'):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', str(tmp_path / 'w'), '--workers', '0'])
    assert not (tmp_path / 'w').exists()  # refused before any output


def test_unwritable_output(inputs):
    # /proc refuses new folders even for root (tests run as root here, so a
    # chmod'ed folder would not do).
    with pytest.raises(PermissionError, match='Cannot write to output'):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', '/proc/sapiens2_no_such_dir/out'])


def test_cli_error_message_and_exit_code(tmp_path):
    proc = subprocess.run(
        [sys.executable, 'tools/infer.py', 'pose', 'configs/nope.py',
         '--input', COCO_DIR, '--output', str(tmp_path)], cwd=REPO_DIR,
        capture_output=True, text=True, timeout=subprocess_budget(10))
    assert proc.returncode == 1
    assert "error: Config file not found: 'configs/nope.py'" in proc.stderr
    shutil.rmtree(tmp_path, ignore_errors=True)


# ------------------------------------------------------------ no lost work
def _photo(path, index=0, size=(96, 72)):
    name = ('000000040083.jpg', '000000197388.jpg', '000000000785.jpg',
            '000000196141.jpg')[index % 4]
    img = cv2.resize(cv2.imread(osp.join(COCO_DIR, name)), size)
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), img)
    return img


def _snapshot(folder):
    return {p: (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob('*')) if p.is_file()}


def test_output_in_an_input_folder_is_refused(tmp_path):
    folder = tmp_path / 'photos'
    _photo(folder / 'a.jpg')
    before = _snapshot(folder)
    for output in (folder, folder / 'out'):
        with pytest.raises(ValueError, match='inside\\) the input folder'):
            infer.main(['seg', tiny_config('seg'), '--input', str(folder),
                        '--output', str(output)])
    with pytest.raises(ValueError, match='input folder'):
        infer.main(['seg', tiny_config('seg'), '--input',
                    str(folder / 'a.jpg'), '--output', str(folder)])
    assert _snapshot(folder) == before


def test_same_names_and_stems_keep_distinct_outputs(tmp_path):
    root = tmp_path / 'in'
    images = {'cam1/0001.jpg': _photo(root / 'cam1' / '0001.jpg', 0),
              'cam2/0001.jpg': _photo(root / 'cam2' / '0001.jpg', 1),
              'cam1/a.jpg': _photo(root / 'cam1' / 'a.jpg', 2),
              'cam1/a.png': _photo(root / 'cam1' / 'a.png', 3)}
    out = tmp_path / 'seg'
    assert infer.main(['seg', tiny_config('seg'), '--input',
                       str(root / 'cam1'), str(root / 'cam2'), '--output',
                       str(out)]) == 0
    for name in ('cam1/0001', 'cam2/0001', 'cam1/a_jpg', 'cam1/a_png'):
        assert np.load(out / f'{name}_seg.npy').shape == (72, 96)
    for name in images:  # each drawing shows its own photo, not another's
        vis = cv2.imread(str(out / name))[:72, :96].astype(int)
        errors = {other: np.abs(vis - cv2.imread(str(root / other))).mean()
                  for other in images}
        assert min(errors, key=errors.get) == name
    # pose: the JSON and the bbox file are keyed by the same names
    boxes = tmp_path / 'boxes.json'
    boxes.write_text(json.dumps({'cam2/0001.jpg': [[5, 5, 60, 70]]}))
    pose_out = tmp_path / 'pose'
    assert infer.main(['pose', tiny_config('pose'), '--input',
                       str(root / 'cam1'), str(root / 'cam2'), '--output',
                       str(pose_out), '--bboxes', str(boxes)]) == 0
    with open(pose_out / 'pose_predictions.json') as f:
        frames = {fr['image_name']: fr for fr in json.load(f)['frames']}
    assert sorted(frames) == sorted(images)
    assert frames['cam2/0001.jpg']['instances'][0]['bbox'] == [5, 5, 60, 70]
    assert frames['cam1/0001.jpg']['instances'][0]['bbox'] == [0, 0, 95, 71]


@pytest.mark.parametrize('workers', ['1', '3'])
def test_interrupted_run_keeps_its_frames_and_resumes(tmp_path, monkeypatch,
                                                       capsys, workers):
    from sapiens2_mm.apis.tasks import pose as pose_task
    folder = tmp_path / 'in'
    for i in range(4):
        _photo(folder / f'{i}.jpg', i)
    out = tmp_path / 'out'
    args = ['pose', tiny_config('pose'), '--input', str(folder), '--output',
            str(out), '--batch-size', '1', '--workers', workers]
    write = pose_task.PoseWriter.write
    calls = []

    def ctrl_c_on_third_frame(self, frame, result):
        calls.append(frame.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return write(self, frame, result)

    monkeypatch.setattr(pose_task.PoseWriter, 'write', ctrl_c_on_third_frame)
    assert infer.main(args) == 130
    assert 'Interrupted. 2 frame(s) finished and kept' in capsys.readouterr(
    ).out
    with open(out / 'out_predictions.json') as f:
        assert [fr['image_name'] for fr in json.load(f)['frames']] == [
            '0.jpg', '1.jpg']
    kept = _snapshot(out)
    monkeypatch.setattr(pose_task.PoseWriter, 'write', write)
    assert infer.main(args) == 0
    log = capsys.readouterr().out
    assert '2 input(s) finished by an earlier run were skipped' in log
    with open(out / 'out_predictions.json') as f:
        assert [fr['image_name'] for fr in json.load(f)['frames']] == [
            '0.jpg', '1.jpg', '2.jpg', '3.jpg']
    for name in ('0.jpg', '1.jpg'):  # earlier outputs are not rewritten
        assert kept[out / name] == _snapshot(out)[out / name]
    # another model into the same folder is refused, nothing is touched
    before = _snapshot(out)
    with pytest.raises(FileExistsError, match='other settings.*flip_test'):
        infer.main(args + ['--flip-test'])
    assert _snapshot(out) == before


def test_folder_of_foreign_files_is_refused(tmp_path):
    folder = tmp_path / 'in'
    _photo(folder / 'a.jpg')
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'notes.txt').write_text('mine')
    with pytest.raises(FileExistsError, match='no inference_index.jsonl'):
        infer.main(['seg', tiny_config('seg'), '--input', str(folder),
                    '--output', str(out)])
    assert (out / 'notes.txt').read_text() == 'mine'


def test_bad_frames_are_skipped_counted_and_listed(tmp_path, monkeypatch,
                                                   capsys):
    from sapiens2_mm.apis import PoseInferencer
    folder = tmp_path / 'in'
    for i in range(3):
        _photo(folder / f'{i}.jpg', i)
    boxes = tmp_path / 'boxes.json'
    boxes.write_text(json.dumps({'0.jpg': [[10, 10, 1e12, 1e12]]}))
    crop = PoseInferencer.crop

    def broken_crop(self, frame, box):
        if frame.name == '1.jpg':
            raise RuntimeError('simulated model failure')
        return crop(self, frame, box)

    monkeypatch.setattr(PoseInferencer, 'crop', broken_crop)
    out = tmp_path / 'out'
    assert infer.main(['pose', tiny_config('pose'), '--input', str(folder),
                       '--output', str(out), '--bboxes', str(boxes),
                       '--batch-size', '3']) == 0
    log = capsys.readouterr().out
    assert '2 frame(s) processed' in log
    assert 'failed 1 frame(s)' in log and 'simulated model failure' in log
    assert '1.jpg: RuntimeError' in log
    with open(out / 'out_predictions.json') as f:
        frames = {fr['image_name']: fr for fr in json.load(f)['frames']}
    assert sorted(frames) == ['0.jpg', '2.jpg']
    assert cv2.imread(str(out / '0.jpg')).shape == (72, 96, 3)  # huge box drawn


def test_non_finite_keypoints_are_not_drawn_and_written_as_null():
    from sapiens2_mm.apis import Frame, PoseResult, get_task
    from sapiens2_mm.metainfo.pose import parsed_metainfo
    meta = parsed_metainfo('coco')
    image = np.zeros((40, 30, 3), np.uint8)
    kpts = np.full((1, 17, 2), 10.0, np.float32)
    kpts[0, 0] = np.nan
    kpts[0, 1] = 1e12
    kpts[0, 2] = -np.inf
    result = PoseResult('a.jpg', (40, 30), np.array([[0, 0, 1e12, np.nan]]),
                        np.ones(1), kpts, np.ones((1, 17), np.float32))
    pose = get_task('pose')
    vis = pose.visualize(Frame('a.jpg', image), result, meta,
                         pose.options(kpt_thr=0.3, radius=2, thickness=1))
    assert vis.shape == image.shape and vis.any()
    entry = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert entry['instances'][0]['keypoints'][0] == [None, None]
    assert entry['instances'][0]['bbox'][3] is None


def test_explicit_box_options(tmp_path, inputs):
    with pytest.raises(ValueError, match='--det-checkpoint needs --det-config'):
        infer.main(['pose', tiny_config('pose'), '--input', str(inputs),
                    '--output', str(tmp_path / 'o'), '--det-checkpoint',
                    str(tmp_path / 'det.pth')])
    assert not (tmp_path / 'o').exists()


def test_empty_folder_says_what_is_read(tmp_path):
    empty = tmp_path / 'empty'
    empty.mkdir()
    (empty / 'notes.txt').write_text('not an image')
    with pytest.raises(FileNotFoundError,
                       match=r'No images or videos found in .*empty.*\.jpg'):
        infer.main(['seg', tiny_config('seg'), '--input', str(empty),
                    '--output', str(tmp_path / 'o')])


def test_missing_gpu_is_a_clear_error(tmp_path, inputs, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    with pytest.raises(ValueError, match="'cuda:0'.*no CUDA GPU"):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', str(tmp_path / 'o'), '--device', 'cuda:0'])
    with pytest.raises(ValueError, match="Unknown device 'gpu'"):
        infer.main(['seg', tiny_config('seg'), '--input', str(inputs),
                    '--output', str(tmp_path / 'o'), '--device', 'gpu'])


def test_truncated_jpeg_is_processed_warned_and_counted(tmp_path, capsys):
    folder = tmp_path / 'in'
    _photo(folder / 'good.jpg')
    data = (folder / 'good.jpg').read_bytes()
    (folder / 'cut.jpg').write_bytes(data[:len(data) // 2])
    out = tmp_path / 'out'
    assert infer.main(['seg', tiny_config('seg'), '--input', str(folder),
                       '--output', str(out)]) == 0
    log = capsys.readouterr().out
    assert '2 frame(s) processed' in log
    assert 'warnings for 1 input(s)' in log and 'cut.jpg: truncated JPEG' in log
    with open(out / 'inference_index.jsonl') as f:
        records = [json.loads(line) for line in f][1:]
    warned = {r['name']: r.get('warning') for r in records}
    assert warned['good.jpg'] is None and 'truncated' in warned['cut.jpg']


def test_interrupted_video_is_redone_and_a_finished_one_skipped(
        tmp_path, inputs, monkeypatch, capsys):
    from sapiens2_mm.apis.tasks import seg as seg_task
    out = tmp_path / 'out'
    args = ['seg', tiny_config('seg'), '--input', str(inputs / 'clip.mp4'),
            '--output', str(out), '--batch-size', '1']
    write = seg_task.SegWriter.write
    calls = []

    def ctrl_c_on_second_frame(self, frame, result):
        calls.append(frame.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return write(self, frame, result)

    monkeypatch.setattr(seg_task.SegWriter, 'write', ctrl_c_on_second_frame)
    assert infer.main(args) == 130
    # the unfinished video under its hidden temporary name
    assert len(list(out.glob('.clip.mp4.*.partial.mp4'))) == 1
    assert not (out / 'clip.mp4').exists()  # only complete videos get it
    monkeypatch.setattr(seg_task.SegWriter, 'write', write)
    assert infer.main(args) == 0
    cap = cv2.VideoCapture(str(out / 'clip.mp4'))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
    cap.release()
    assert not list(out.glob('.clip.mp4.*'))  # the stale temporary removed
    with open(out / 'inference_index.jsonl') as f:
        lines = [json.loads(line) for line in f][1:]
    assert [r['video_done'] for r in lines if 'video_done' in r] == [
        'clip.mp4']
    capsys.readouterr()
    kept = _snapshot(out)
    assert infer.main(args) == 0  # finished: skipped without decoding
    assert '1 input(s) finished by an earlier run were skipped' in \
        capsys.readouterr().out
    assert {p: v for p, v in _snapshot(out).items()
            if p.name != 'inference_index.jsonl'} == {
        p: v for p, v in kept.items() if p.name != 'inference_index.jsonl'}


def test_workers_write_the_same_files(tmp_path):
    """Decoding, crops, drawing and encoding on 3 threads: every output file
    equals the one-thread run's, byte for byte (the index aside: it holds
    the run's options)."""
    folder = tmp_path / 'in'
    for i in range(5):
        _photo(folder / f'{i}.jpg', i)
    runs = {}
    for workers in ('1', '3'):
        torch.manual_seed(0)  # the same random weights
        out = tmp_path / f'out{workers}'
        assert infer.main(['seg', tiny_config('seg'), '--input', str(folder),
                           '--output', str(out), '--batch-size', '2',
                           '--workers', workers]) == 0
        runs[workers] = {p.name: p.read_bytes() for p in out.iterdir()
                         if p.name != 'inference_index.jsonl'}
    assert sorted(runs['1']) == sorted(
        [f'{i}.jpg' for i in range(5)] + [f'{i}_seg.npy' for i in range(5)])
    assert runs['1'] == runs['3']


def _seg_run_drawing_fails_on(tmp_path, monkeypatch, photos, bad, error):
    """tools/infer.py seg on ``photos`` photos, 3 workers, the drawing of
    ``bad`` raising ``error``; (exit code, output folder)."""
    from sapiens2_mm.apis.tasks.seg import SegTask
    folder = tmp_path / 'in'
    for i in range(photos):
        _photo(folder / f'{i}.jpg', i)
    draw = SegTask.visualize

    def broken(self, frame, result, meta, options):
        if frame.name == bad:
            raise error
        return draw(self, frame, result, meta, options)

    monkeypatch.setattr(SegTask, 'visualize', broken)
    out = tmp_path / 'out'
    return infer.main(['seg', tiny_config('seg'), '--input', str(folder),
                       '--output', str(out), '--workers', '3']), out


def test_drawing_failure_skips_only_that_frame(tmp_path, monkeypatch,
                                               capsys):
    rc, out = _seg_run_drawing_fails_on(
        tmp_path, monkeypatch, 4, '2.jpg',
        RuntimeError('simulated drawing failure'))
    assert rc == 0
    log = capsys.readouterr().out
    assert '3 frame(s) processed' in log
    assert '2.jpg: RuntimeError: simulated drawing failure' in log
    assert sorted(p.name for p in out.iterdir() if p.suffix == '.jpg') == [
        '0.jpg', '1.jpg', '3.jpg']


def test_ctrl_c_while_drawing_on_a_worker(tmp_path, monkeypatch, capsys):
    """Ctrl-C arriving in a drawing thread stops the run like one in the
    main thread: finished frames are kept, the run says it was interrupted."""
    rc, out = _seg_run_drawing_fails_on(tmp_path, monkeypatch, 6, '3.jpg',
                                        KeyboardInterrupt())
    assert rc == 130
    assert 'Interrupted. 3 frame(s) finished and kept' in \
        capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir() if p.suffix == '.npy') == [
        '0_seg.npy', '1_seg.npy', '2_seg.npy']
