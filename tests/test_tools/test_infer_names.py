"""tools/infer.py never stands one input's outputs in for another's (issue 18,
items 3, 4, 6): temporary names, video frames next to photos of the same
name, and re-runs whose input of a name is another file."""
import json
import os
import os.path as osp

import cv2
import infer
import numpy as np
import pytest

from tests.conftest import COCO_DIR
from tests.test_apis.tiny_configs import tiny_config

PHOTOS = ('000000040083.jpg', '000000197388.jpg', '000000000785.jpg')


# tiny models: one thread avoids oversubscribing a shared CPU
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _photo(path, index=0, size=(64, 48)):
    img = cv2.resize(cv2.imread(osp.join(COCO_DIR, PHOTOS[index])), size)
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), img)
    return cv2.imread(str(path))  # as decoded (JPEG is lossy)


def _video(path, num_frames=3, size=(64, 48)):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'mp4v'), 4.0,
                             size)
    for i in range(num_frames):
        writer.write(np.full((size[1], size[0], 3), 40 + 60 * i, np.uint8))
    writer.release()


def _seg(inputs, out, *extra):
    return infer.main(['seg', tiny_config('seg'), '--input',
                       *[str(i) for i in inputs], '--output', str(out),
                       '--batch-size', '2', '--serial', *extra])


def _records(out):
    with open(out / 'inference_index.jsonl') as f:
        return [json.loads(line) for line in f][1:]


def test_temporary_name_is_never_a_photo_name(tmp_path, capsys):
    """``a.png``'s drawing was written as ``a.partial.png`` and renamed: the
    drawing of the photo ``a.partial.png`` was moved onto ``a.png``."""
    folder = tmp_path / 'in'
    images = {'a.partial.png': _photo(folder / 'a.partial.png', 0),
              'a.png': _photo(folder / 'a.png', 1)}
    out = tmp_path / 'out'
    assert _seg([folder], out) == 0
    assert '2 frame(s) processed' in capsys.readouterr().out
    for name, image in images.items():
        drawing = cv2.imread(str(out / name))
        assert drawing is not None, name
        # [image | overlay]: the left half is that photo (PNG: lossless)
        np.testing.assert_array_equal(drawing[:48, :64], image, err_msg=name)
    assert not [n for n in os.listdir(out) if n.startswith('.')]  # no temporaries
    from sapiens2_mm.utils.atomic_file import default_file_mode
    modes = {n: os.stat(out / n).st_mode & 0o777 for n in os.listdir(out)}
    assert set(modes.values()) == {default_file_mode()}, modes


def test_temporary_path_is_new_hidden_and_keeps_the_extension(tmp_path):
    from sapiens2_mm.utils.atomic_file import default_file_mode, temporary_path
    (tmp_path / 'a.partial.png').write_bytes(b'photo')
    tmp = temporary_path(str(tmp_path / 'a.png'))
    name = osp.basename(tmp)
    assert name.startswith('.a.png.') and name.endswith('.partial.png')
    assert osp.getsize(tmp) == 0
    # not mkstemp's 0600: outputs get the mode open() gives
    assert os.stat(tmp).st_mode & 0o777 == default_file_mode()
    assert (tmp_path / 'a.partial.png').read_bytes() == b'photo'
    assert temporary_path(str(tmp_path / 'a.png')) != tmp


def test_video_frames_and_a_photo_of_a_frame_name_keep_apart(tmp_path,
                                                              capsys):
    """``clip.mp4`` (3 frames, 48x64) and the photo ``clip_000000.jpg``
    (64x48): the photo's outputs replaced frame 0's and the index kept one
    of them ("4 frames processed", 3 label maps)."""
    folder = tmp_path / 'in'
    photo = _photo(folder / 'clip_000000.jpg', size=(64, 48))
    _video(folder / 'clip.mp4', 3, size=(48, 64))
    out = tmp_path / 'out'
    assert _seg([folder], out) == 0
    assert '4 frame(s) processed' in capsys.readouterr().out
    records = _records(out)
    names = [r['name'] for r in records if 'name' in r]
    assert sorted(names) == ['clip_000000.jpg', 'clip_mp4_000000.jpg',
                             'clip_mp4_000001.jpg', 'clip_mp4_000002.jpg']
    maps = sorted(n for n in os.listdir(out) if n.endswith('_seg.npy'))
    assert maps == ['clip_000000_seg.npy', 'clip_mp4_000000_seg.npy',
                    'clip_mp4_000001_seg.npy', 'clip_mp4_000002_seg.npy']
    assert np.load(out / 'clip_000000_seg.npy').shape == (48, 64)  # photo
    assert np.load(out / 'clip_mp4_000000_seg.npy').shape == (64, 48)
    drawing = cv2.imread(str(out / 'clip_000000.jpg'))
    assert np.abs(drawing[:48, :64].astype(int) - photo).mean() < 3
    cap = cv2.VideoCapture(str(out / 'clip.mp4'))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 3
    cap.release()
    # the same command again: both inputs were finished
    assert _seg([folder], out) == 0
    log = capsys.readouterr().out
    assert '0 frame(s) processed' in log
    assert '2 input(s) finished by an earlier run were skipped' in log


def test_stems_stay_unique_after_the_extension_rule():
    from sapiens2_mm.apis.inputs import _frame_bases, _unique_stems
    names = ['a.jpg', 'a.png', 'a_jpg.png', 'b.png']
    assert _unique_stems(names) == ['a_jpg', 'a_png', 'a_jpg_2', 'b']
    names = ['v.mp4', 'v_000007.png', 'v_mp4_000000.jpg', 'w.mp4']
    stems = _unique_stems(names)
    assert _frame_bases(names, stems, [True, False, False, True]) == [
        'v_mp4_2', '', '', 'w']


def test_rerun_with_another_photo_of_a_done_name_is_refused(tmp_path,
                                                            capsys):
    """``--input B/`` after ``--input A/``, B holding another ``x.jpg``: the
    run said "0 frames processed, 1 input finished by an earlier run was
    skipped" and A's label map stood for B's photo."""
    first, second = tmp_path / 'A', tmp_path / 'B'
    _photo(first / 'x.jpg', 0)
    _photo(second / 'x.jpg', 1)
    out = tmp_path / 'out'
    assert _seg([first], out) == 0
    kept = {n: (out / n).read_bytes() for n in os.listdir(out)}
    with pytest.raises(FileExistsError, match="results of other files") as e:
        _seg([second], out)
    assert "'x.jpg'" in str(e.value) and str(second / 'x.jpg') in str(e.value)
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == kept
    # the same file again: skipped
    capsys.readouterr()
    assert _seg([first], out) == 0
    assert '1 input(s) finished by an earlier run were skipped' in \
        capsys.readouterr().out


def test_rerun_after_the_photo_or_video_changed_is_refused(tmp_path):
    folder = tmp_path / 'in'
    _photo(folder / 'x.jpg', 0)
    _video(folder / 'clip.mp4', 2)
    out = tmp_path / 'out'
    assert _seg([folder], out) == 0
    _video(folder / 'clip.mp4', 3)  # another video under the same path
    with pytest.raises(FileExistsError, match="'clip.mp4'.*changed since"):
        _seg([folder], out)
    # a video cut short by an interrupted run: its frames are checked too
    index = out / 'inference_index.jsonl'
    lines = index.read_text().splitlines()
    index.write_text('\n'.join(
        line for line in lines if 'video_done' not in line) + '\n')
    with pytest.raises(FileExistsError, match="'clip_000000.jpg'"):
        _seg([folder], out)
