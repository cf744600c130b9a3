"""tools/infer.py and run_inference never lose or mix earlier work (issue
29): a later input never replaces another input's listed outputs, masks are
read by a stated convention, arrays of two API calls keep apart, bad bbox
file entries are named, a full disk stops the run, settings of a resumed
run are checked."""
import json
import os
import os.path as osp

import cv2
import infer
import pytest

from tests.conftest import COCO_DIR, DATA_DIR, REPO_DIR
from tests.test_apis.tiny_configs import tiny_config, tiny_model

DENSE = osp.join(DATA_DIR, 'dense_sample', 'rgb')

# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _photo(path, index=0, size=(64, 48)):
    img = cv2.imread(osp.join(DENSE, f'scene_0000{index}.png'))
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), cv2.resize(img, size))
    return path


def _infer(task, inputs, out, *extra, checkpoint=None):
    return infer.main([task, tiny_config(task),
                       *([checkpoint] if checkpoint else []), '--input',
                       *[str(i) for i in inputs], '--output', str(out),
                       '--serial', *extra])


@pytest.fixture(scope='module')
def seg_ckpt(tmp_path_factory):
    """Seeded random weights of the tiny seg config (the same model in
    every run, unlike a run without a checkpoint)."""
    import torch
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    torch.manual_seed(0)
    path = str(tmp_path_factory.mktemp('ckpt') / 'seg.pth')
    model = MODELS.build(Config.fromfile(tiny_config('seg')).model)
    torch.save({'state_dict': model.state_dict()}, path)
    return path


def _records(out):
    with open(out / 'inference_index.jsonl') as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0], [r for r in lines[1:] if 'name' in r]


# -- item 1: a later input never replaces another input's listed outputs --

def test_later_photo_never_replaces_an_earlier_photos_map(tmp_path, capsys):
    """``x.jpg`` gives ``out/x_normal.png``; a photo ``x_normal.png`` added
    later was drawn as ``out/x_normal.png`` over x.jpg's map (rc 0, no
    message). It is refused (failed, listed) and x.jpg's map is kept."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'x.jpg', 0, (64, 48))
    assert _infer('normal', [folder], out) == 0
    kept = (out / 'x_normal.png').read_bytes()
    _photo(folder / 'x_normal.png', 1, (40, 30))
    capsys.readouterr()
    _infer('normal', [folder], out)
    log = capsys.readouterr().out
    assert (out / 'x_normal.png').read_bytes() == kept
    assert cv2.imread(str(out / 'x_normal.png')).shape[:2] == (48, 64)
    assert 'failed 1 frame(s)' in log
    assert "'x.jpg'" in log and 'x_normal.png' in log
    _, records = _records(out)
    owners = {o: r['name'] for r in records for o in r['outputs']}
    assert owners['x_normal.png'] == 'x.jpg'
    assert 'x_normal.png' not in [r['name'] for r in records]


def test_later_photo_never_writes_a_map_over_an_earlier_drawing(tmp_path,
                                                               capsys):
    """The other way round: the drawing ``out/y_normal.png`` of the photo
    ``y_normal.png`` is kept when a photo ``y.jpg`` (map ``y_normal.png``)
    comes later."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'y_normal.png', 0, (64, 48))
    assert _infer('normal', [folder], out) == 0
    kept = (out / 'y_normal.png').read_bytes()
    _photo(folder / 'y.jpg', 1, (40, 30))
    capsys.readouterr()
    _infer('normal', [folder], out)
    log = capsys.readouterr().out
    assert (out / 'y_normal.png').read_bytes() == kept
    assert 'failed 1 frame(s)' in log and "'y_normal.png'" in log


# -- item 3: arrays of two API calls into one folder keep apart --

def test_arrays_of_two_calls_never_share_a_name(tmp_path):
    """``run_inference('seg', cfg, [a], out)`` then ``[b]``: b's
    ``array_000000_seg.npy`` replaced a's and the index held two lines of
    one name (a loop over frames kept only the last)."""
    import numpy as np

    from sapiens2_mm.apis import run_inference
    out = tmp_path / 'out'
    arrays = [cv2.resize(cv2.imread(osp.join(DENSE, f'scene_0000{i}.png')),
                         size) for i, size in ((0, (64, 48)), (1, (40, 30)))]
    for array in arrays:
        summary = run_inference('seg', tiny_config('seg'), [array],
                                str(out), serial=True, echo=lambda _: None)
        assert summary.processed == 1
    _, records = _records(out)
    names = [r['name'] for r in records]
    assert len(set(names)) == 2, names
    shapes = sorted(np.load(out / r['outputs'][0]).shape for r in records)
    assert shapes == [(30, 40), (48, 64)]
    for record, array in zip(records, arrays):
        # [image | overlay] above the class key; PNG keeps the pixels
        drawing = cv2.imread(str(out / record['outputs'][-1]))
        h, w = array.shape[:2]
        np.testing.assert_array_equal(drawing[:h, :w], array)


# -- item 5: a COCO bbox file entry without a usable "bbox" is named --

@pytest.mark.parametrize('bad', [{}, {'bbox': None}, {'bbox': [1, 2, 3]},
                                 {'bbox': [1, 2, 'w', 4]}])
def test_coco_annotation_without_a_bbox_is_named(tmp_path, bad):
    """An annotation without "bbox" or with "bbox": null gave a raw
    KeyError / TypeError; now a one-line error naming the annotation."""
    from sapiens2_mm.apis.box_sources import BoxFile
    ann = dict(id=7, image_id=1, category_id=1, iscrowd=0, **bad)
    coco = dict(images=[dict(id=1, file_name='a.jpg', width=64, height=48)],
                categories=[dict(id=1, name='person')],
                annotations=[dict(id=6, image_id=1, category_id=1,
                                  iscrowd=0, bbox=[1, 2, 10, 20]), ann])
    path = tmp_path / 'coco.json'
    path.write_text(json.dumps(coco))
    with pytest.raises(ValueError, match=r'annotation 7 .*"bbox"') as err:
        BoxFile(str(path))
    assert '\n' not in str(err.value) and str(path) in str(err.value)
    photo = _photo(tmp_path / 'in' / 'a.jpg')
    with pytest.raises(ValueError, match='annotation 7'):
        _infer('pose', [photo], tmp_path / 'out', '--bboxes', str(path))


def test_coco_boxes_are_clipped_as_mmpose_clips_them():
    """mmpose's CocoDataset clips each box to [0, W - 1] x [0, H - 1]; the
    bbox file reader did not (2 of 12 people of the sample differed from
    tools/test.py by 2.04 px and 0.55 px)."""
    import numpy as np
    from mmpose.datasets import CocoDataset

    from sapiens2_mm.apis.box_sources import BoxFile
    ann_file = osp.join(COCO_DIR, 'test_coco.json')
    dataset = CocoDataset(ann_file=ann_file, data_root='',
                          data_prefix=dict(img=COCO_DIR + '/'), test_mode=True,
                          pipeline=[])
    expected = {}
    for info in map(dataset.get_data_info, range(len(dataset))):
        expected.setdefault(osp.basename(info['img_path']), []).append(
            info['bbox'][0])
    ours = BoxFile(ann_file).boxes
    with open(ann_file) as f:
        coco = json.load(f)
    clipped = 0
    for name, boxes in expected.items():
        # mmpose's test set leaves out people with no keypoints annotated;
        # the bbox file keeps them (they still get poses)
        ids = {im['id'] for im in coco['images'] if im['file_name'] == name}
        keep = [a.get('num_keypoints', 1) > 0 for a in coco['annotations']
                if a['image_id'] in ids and not a.get('iscrowd')]
        np.testing.assert_array_equal(ours[name][keep, :4],
                                      np.array(boxes, np.float32))
        raw = [a['bbox'] for a in coco['annotations'] if a['image_id'] in ids
               and not a.get('iscrowd')]
        clipped += sum(x + w != b[2] for (x, _, w, _), b in zip(
            np.array(raw)[keep], boxes))
    assert clipped >= 1  # the sample has boxes reaching past the border


def test_bbox_file_naming_no_frame_is_warned(tmp_path, capsys):
    """Keys that match no frame gave every frame the whole-image box with
    only a count line."""
    photo = _photo(tmp_path / 'in' / 'a.jpg')
    boxes = tmp_path / 'boxes.json'
    boxes.write_text(json.dumps({'photos/a.jpg': [[1, 2, 30, 40]]}))
    assert _infer('pose', [photo], tmp_path / 'out', '--bboxes',
                  str(boxes)) == 0
    log = capsys.readouterr().out
    assert "WARNING: no frame is named in the bbox file" in log
    assert "'photos/a.jpg'" in log and "'a.jpg'" in log


# -- meh: a full disk stops the run once, with a word of it --

@pytest.mark.parametrize('error', [
    OSError('272000 requested and 122752 written'),  # numpy's short write
    OSError(28, 'No space left on device')])
def test_full_disk_stops_the_run_and_the_rerun_continues(tmp_path, capsys,
                                                         monkeypatch, error):
    """57 of 60 frames failed with numpy's "requested and written", no word
    of disk space, exit 0. Now: "disk full" once, the run stops (exit 1),
    the index keeps the finished frame and the same command continues."""
    import numpy as np
    folder, out = tmp_path / 'in', tmp_path / 'out'
    for i in range(4):
        _photo(folder / f'p{i}.png', i % 3, (40, 30))
    real_save, calls = np.save, []

    def save(file, array, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise error
        return real_save(file, array, *args, **kwargs)
    monkeypatch.setattr(np, 'save', save)
    assert _infer('seg', [folder], out, '--batch-size', '1') == 1
    log = capsys.readouterr().out
    assert log.count('disk full') == 1, log
    assert 'failed' not in log
    assert len(calls) == 2  # stopped at the first failed write
    _, records = _records(out)
    assert [r['name'] for r in records] == ['p0.png']
    monkeypatch.setattr(np, 'save', real_save)
    assert _infer('seg', [folder], out, '--batch-size', '1') == 0
    log = capsys.readouterr().out
    assert '3 frame(s) processed' in log
    assert '1 input(s) finished by an earlier run were skipped' in log


# -- meh: the index checks pose settings, redoes what is missing --

def test_pose_settings_are_checked_on_a_rerun(tmp_path):
    """--bboxes, --bbox-thr, --kpt-thr and the detector options were not in
    the index header: a resumed run with another bbox file mixed results,
    and kpt_thr_used read 0.9 for frames done at 0.3."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.jpg', 0)
    boxes = tmp_path / 'boxes.json'
    boxes.write_text(json.dumps({'a.jpg': [[1, 2, 30, 40]]}))
    args = ('--bboxes', str(boxes), '--kpt-thr', '0.5')
    assert _infer('pose', [folder], out, *args) == 0
    assert _infer('pose', [folder], out, *args) == 0  # the same: continues
    header, _ = _records(out)
    assert header['pose_options'] == {
        'bboxes': [str(boxes), [boxes.stat().st_size,
                                boxes.stat().st_mtime_ns]],
        'kpt_thr': 0.5}
    other = tmp_path / 'other.json'
    other.write_text(json.dumps({'a.jpg': [[5, 6, 30, 40]]}))
    for changed in (('--bboxes', str(other), '--kpt-thr', '0.5'),
                    ('--bboxes', str(boxes), '--kpt-thr', '0.9'),
                    ('--bboxes', str(boxes), '--kpt-thr', '0.5',
                     '--bbox-thr', '0.1'),
                    ('--kpt-thr', '0.5')):
        with pytest.raises(FileExistsError, match='pose_options'):
            _infer('pose', [folder], out, *changed)
    boxes.write_text(json.dumps({'a.jpg': [[1, 2, 30, 41]]}))  # edited
    with pytest.raises(FileExistsError, match='pose_options'):
        _infer('pose', [folder], out, *args)


def test_frames_done_without_drawings_are_drawn_later(tmp_path, capsys,
                                                       seg_ckpt):
    """Frames finished under --no-vis never got drawings when a later run
    asked for them; a video is redone for its drawing too."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    writer = cv2.VideoWriter(str(folder / 'clip.mp4'),
                             cv2.VideoWriter_fourcc(*'mp4v'), 4.0, (48, 64))
    for i in range(2):
        writer.write(cv2.resize(cv2.imread(osp.join(
            DENSE, f'scene_0000{i}.png')), (48, 64)))
    writer.release()
    assert _infer('seg', [folder], out, '--no-vis', checkpoint=seg_ckpt) == 0
    assert not (out / 'a.png').exists() and not (out / 'clip.mp4').exists()
    maps = (out / 'a_seg.npy').read_bytes()
    capsys.readouterr()
    assert _infer('seg', [folder], out, checkpoint=seg_ckpt) == 0
    log = capsys.readouterr().out
    assert '3 frame(s) processed' in log
    assert (out / 'a.png').exists() and (out / 'clip.mp4').exists()
    assert (out / 'a_seg.npy').read_bytes() == maps  # the same result
    _, records = _records(out)
    assert sorted({r['name'] for r in records}) == [
        'a.png', 'clip_000000.jpg', 'clip_000001.jpg']
    # now all done
    assert _infer('seg', [folder], out, checkpoint=seg_ckpt) == 0
    assert '0 frame(s) processed' in capsys.readouterr().out
    # a video whose drawing was deleted is redone as a whole
    (out / 'clip.mp4').unlink()
    assert _infer('seg', [folder], out, checkpoint=seg_ckpt) == 0
    log = capsys.readouterr().out
    assert '2 frame(s) processed' in log
    assert 'clip.mp4: outputs missing: clip.mp4' in log
    assert (out / 'clip.mp4').exists()


def test_deleted_outputs_are_redone_not_skipped(tmp_path, capsys,
                                                seg_ckpt):
    """Outputs the user deleted were skipped on a re-run while the summary
    still counted them."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    _photo(folder / 'b.png', 1)
    assert _infer('seg', [folder], out, checkpoint=seg_ckpt) == 0
    maps = (out / 'a_seg.npy').read_bytes()
    (out / 'a_seg.npy').unlink()
    capsys.readouterr()
    assert _infer('seg', [folder], out, checkpoint=seg_ckpt) == 0
    log = capsys.readouterr().out
    assert '1 frame(s) processed' in log
    assert '1 input(s) finished by an earlier run were skipped' in log
    assert 'redid 1 input(s) an earlier run had finished:' in log
    assert 'a.png: outputs missing: a_seg.npy' in log
    assert (out / 'a_seg.npy').read_bytes() == maps


def test_two_runs_into_one_folder_are_refused(tmp_path):
    """Two concurrent runs into one folder had no lock (54 frames done
    twice, 27 index lines clobbered)."""
    import socket

    from sapiens2_mm.utils.train_lock import WorkDirLockedError
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    assert _infer('seg', [folder], out) == 0
    assert not (out / '.inference.lock').exists()  # released at the end
    # another live process of this host holds the folder
    (out / '.inference.lock').write_text(json.dumps(dict(
        pid=os.getppid(), host=socket.gethostname(), started='then',
        command='tools/infer.py seg ...')))
    with pytest.raises(WorkDirLockedError,
                       match='in use by another tools/infer.py run'):
        _infer('seg', [folder], out)
    _, records = _records(out)
    assert len(records) == 1


def test_a_damaged_index_header_is_named(tmp_path):
    """A corrupt header read "written with other settings (... None
    then)"."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    assert _infer('seg', [folder], out) == 0
    index = out / 'inference_index.jsonl'
    lines = index.read_text().splitlines()
    index.write_text('\n'.join(['{"task": "seg", "conf'] + lines[1:]) + '\n')
    with pytest.raises(FileExistsError) as err:
        _infer('seg', [folder], out)
    text = str(err.value)
    assert 'line 1' in text and 'not a readable index header' in text
    assert 'None then' not in text


# -- meh: dense summary, ply_step, video frames --

def test_summary_names_the_array_dtype(tmp_path, capsys):
    """The summary said "float32" for --array-dtype float16."""
    folder = tmp_path / 'in'
    _photo(folder / 'a.png', 0)
    assert _infer('normal', [folder], tmp_path / 'out', '--no-vis',
                  '--array-dtype', 'float16') == 0
    log = capsys.readouterr().out
    assert 'normals: 1 x <stem>_normal.npy (H, W, 3 float16 unit' in log
    assert 'float32' not in log


def test_ply_step_is_checked_and_recorded(tmp_path):
    """``ply_step=0`` was accepted and every frame failed; another
    --ply-step continued a run of another one."""
    from sapiens2_mm.apis import run_inference
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    for bad in (0, -2, 1.5, 'two', True):
        with pytest.raises(ValueError, match='ply_step'):
            run_inference('pointmap', tiny_config('pointmap'), [str(folder)],
                          str(out), ply_step=bad, echo=lambda _: None)
    assert not out.exists() or not os.listdir(out)
    # random weights may predict a scale <= 0: clamped, the frame finishes
    clamp = ('--cfg-options', 'model.decode_head.scale_guard=clamp')
    assert _infer('pointmap', [folder], out, '--no-vis', '--ply-step', '2',
                  *clamp) == 0
    header, records = _records(out)
    assert header['dense_options'] == {'ply_step': 2}
    assert records[0]['frame']['ply_step'] == 2
    with pytest.raises(FileExistsError, match='ply_step'):
        _infer('pointmap', [folder], out, '--no-vis', *clamp)


def test_a_video_decoding_fewer_frames_than_listed_is_warned(tmp_path,
                                                              capsys):
    """A video that decodes 10 of its 20 frames got no warning."""
    import numpy as np
    folder = tmp_path / 'in'
    folder.mkdir()
    writer = cv2.VideoWriter(str(tmp_path / 'full.avi'),
                             cv2.VideoWriter_fourcc(*'MJPG'), 4.0, (48, 64))
    for i in range(20):
        writer.write(np.random.RandomState(i).randint(0, 255, (64, 48, 3),
                                                      np.uint8))
    writer.release()
    data = (tmp_path / 'full.avi').read_bytes()
    (folder / 'cut.avi').write_bytes(data[:len(data) // 2])  # header: 20
    cap = cv2.VideoCapture(str(folder / 'cut.avi'))
    listed = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    decoded = 0
    while cap.read()[0]:
        decoded += 1
    cap.release()
    assert 0 < decoded < listed == 20
    assert _infer('seg', [folder], tmp_path / 'out', '--no-vis') == 0
    log = capsys.readouterr().out
    assert f'{decoded} frame(s) processed' in log
    assert 'warnings for 1 input(s) (processed):' in log
    assert f'decoded {decoded} of the 20 frames' in log


# -- meh: clear messages for odd inputs and options --

def test_empty_array_and_unknown_device_are_refused():
    """An empty (0, 0, 3) array returned [] silently; device='gpu' gave
    torch's raw 'Expected one of cpu, cuda, ...'."""
    import numpy as np

    from sapiens2_mm.apis import build_inferencer, run_inference
    with pytest.raises(ValueError, match=r'Unknown device .gpu.'):
        tiny_model('seg', device='gpu')
    seg = build_inferencer(tiny_model('seg'))
    empty = np.zeros((0, 0, 3), np.uint8)
    with pytest.raises(ValueError, match=r'\(0, 0, 3\) has no pixels'):
        seg(empty)
    with pytest.raises(ValueError, match='has no pixels'):
        run_inference('seg', tiny_config('seg'), [empty], 'never_written',
                      echo=lambda _: None)
    assert not osp.exists('never_written')


@pytest.mark.parametrize('task,size,expected', [
    ('pose', (1, 1), 'the photo is 1x1 pixel(s): its whole-image box'),
    ('pointmap', (500, 1), 'the photo is 1x500 pixels; letterboxed into '
     'the 128x96 network input it is 0x96')])
def test_too_small_photos_are_named_as_such(tmp_path, capsys, task, size,
                                            expected):
    """A 1x1 photo in pose was blamed on "the box of this annotation", a
    1x500 photo in pointmap gave a raw padding error."""
    import numpy as np
    folder = tmp_path / 'in'
    folder.mkdir()
    cv2.imwrite(str(folder / 'thin.png'),
                np.full((size[1], size[0], 3), 128, np.uint8))
    assert _infer(task, [folder], tmp_path / 'out') == 1  # nothing finished
    log = capsys.readouterr().out
    assert f'thin.png: ValueError: {expected}' in log


def _cli_error(argv):
    """The message of ``tools/infer.py argv`` ending with exit status 1."""
    with pytest.raises(SystemExit) as exit_info:
        infer.cli(argv)
    message = str(exit_info.value.code)
    assert message.startswith('error: '), message
    return message


def test_user_errors_are_one_error_line(tmp_path):
    """Tracebacks where docs/inference.md promises an ``error:`` line: a 4K
    checkpoint with a 1K config, a config syntax error, a misspelled type;
    a photo passed as checkpoint got torch's advice to set
    weights_only=False."""
    import torch
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    photo = _photo(tmp_path / 'in' / 'a.png')
    out = str(tmp_path / 'out')
    four_k = osp.join(REPO_DIR, 'configs', 'normal',
                      'sapiens2-tiny-4k_1xb2-30_densesample-512x384.py')
    ckpt = str(tmp_path / 'n4k.pth')
    torch.save({'state_dict': MODELS.build(
        Config.fromfile(four_k).model).state_dict()}, ckpt)
    message = _cli_error(['normal', tiny_config('normal'), ckpt, '--input',
                          str(photo), '--output', out])
    assert 'A 4K checkpoint for a 1K model' in message
    bad = tmp_path / 'bad.py'
    bad.write_text("model = dict(type='DenseEstimator'\n")
    message = _cli_error(['normal', str(bad), '--input', str(photo),
                          '--output', out])
    assert str(bad) in message and 'not valid Python' in message
    assert 'line 1' in message
    typo = tmp_path / 'typo.py'
    typo.write_text(f'_base_ = [{tiny_config("normal")!r}]\n'
                    "model = dict(backbone=dict(type='Sapiens2Bakbone'))\n")
    message = _cli_error(['normal', str(typo), '--input', str(photo),
                          '--output', out])
    assert 'Unknown type Sapiens2Bakbone' in message and str(typo) in message
    fake = tmp_path / 'model.pth'
    fake.write_bytes(photo.read_bytes())
    message = _cli_error(['normal', tiny_config('normal'), str(fake),
                          '--input', str(photo), '--output', out])
    assert 'it is a PNG image, not a checkpoint' in message
    assert 'weights_only' not in message
    assert _records(tmp_path / 'out')[1] == []  # nothing was done


def test_cfg_option_without_a_value_is_named(tmp_path, capsys):
    """``--cfg-options model.backbone`` said "not enough values to unpack
    (expected 2, got 1)"."""
    with pytest.raises(SystemExit) as exit_info:
        infer.cli(['normal', tiny_config('normal'), '--input', str(tmp_path),
                   '--output', str(tmp_path / 'out'), '--cfg-options',
                   'model.backbone'])
    assert exit_info.value.code == 2  # argparse's usage error
    err = capsys.readouterr().err
    assert "--cfg-options 'model.backbone': expected KEY=VALUE" in err


def test_a_line_cut_short_does_not_swallow_the_next(tmp_path, capsys):
    """An index line cut short by a crash or a full disk: the frame is
    redone, and the next run's first line is not glued to it."""
    folder, out = tmp_path / 'in', tmp_path / 'out'
    _photo(folder / 'a.png', 0)
    _photo(folder / 'b.png', 1)
    assert _infer('seg', [folder], out) == 0
    index = out / 'inference_index.jsonl'
    text = index.read_text()
    index.write_text(text[:-40])  # b.png's line cut, no newline at the end
    capsys.readouterr()
    assert _infer('seg', [folder], out) == 0
    assert '1 frame(s) processed' in capsys.readouterr().out
    parsed, broken = [], []
    for line in index.read_text().splitlines():
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            broken.append(line)
    assert broken == [text[:-40].splitlines()[-1]]  # only the cut line
    assert sorted(r['name'] for r in parsed if 'name' in r) == ['a.png',
                                                                'b.png']
