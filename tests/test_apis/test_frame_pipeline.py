"""The frame pipeline: the inferencers' prepare / forward / finish composed serially
and overlapped (identical results), full batches across frames, order kept
on worker threads, failures isolated to their frame, drawing + encoding."""
import json
import os
import os.path as osp
import shutil
import threading
import time

import cv2
import numpy as np
import pytest
import torch

from sapiens2_mm.apis import (
    BoxFile,
    PoseInferencer,
    SegInferencer,
    WholeImageBoxes,
)
from sapiens2_mm.apis.frame_pipeline import (
    FramePipeline,
    StreamBatcher,
    check_batch_size,
    check_workers,
    default_workers,
    ordered_map,
    render_frames,
)
from sapiens2_mm.apis.inputs import Frame
from tests.conftest import COCO_DIR, PHOTO
from tests.test_apis.tiny_configs import coco_sample_boxes, tiny_model


@pytest.fixture(scope='module')
def photos():
    return sorted(osp.join(COCO_DIR, n) for n in
                  ('000000000785.jpg', '000000040083.jpg',
                   '000000196141.jpg', '000000197388.jpg'))


@pytest.fixture()
def box_file(tmp_path):
    path = tmp_path / 'boxes.json'
    path.write_text(json.dumps(coco_sample_boxes()))
    return str(path)


def _assert_identical(serial, overlapped):
    assert [r.name for r in overlapped] == [r.name for r in serial]
    for a, b in zip(serial, overlapped):
        for field, value in vars(a).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(getattr(b, field), value)
            else:
                assert getattr(b, field) == value


@pytest.mark.parametrize('flip_test', [False, True])
def test_pose_overlapped_equals_serial(photos, box_file, flip_test):
    """--serial (one thread) and workers=3 (overlapped) run the same steps
    on the same batches: identical results."""
    torch.manual_seed(0)
    model = tiny_model('pose')
    # batch_size 3 crops: batches mix the people of different photos.
    inferencer = PoseInferencer(model, batch_size=3, flip_test=flip_test,
                                boxes=BoxFile(box_file))
    serial = inferencer(photos)
    overlapped = inferencer(photos, workers=3)
    assert [r.name for r in overlapped] == [osp.basename(p) for p in photos]
    assert sum(len(r.bboxes) for r in overlapped) == 14  # every COCO person
    _assert_identical(serial, overlapped)


def test_seg_overlapped_equals_serial(photos):
    torch.manual_seed(0)
    model = tiny_model('seg')
    inferencer = SegInferencer(model, batch_size=3, flip_test=True)
    serial = inferencer(photos)
    assert len(serial) == 4
    _assert_identical(serial, inferencer(photos, workers=2, overlap=True))
    _assert_identical(serial, inferencer(photos, workers=1, overlap=True))


class _FailOn:
    """Whole-image boxes, raising for one frame (a broken box source)."""

    def __init__(self, name):
        self.name = name

    def __call__(self, frame):
        if osp.basename(frame.name) == self.name:
            raise RuntimeError('box source broke')
        return WholeImageBoxes()(frame)


@pytest.mark.parametrize('workers', [1, 3])
def test_failing_frame_is_skipped_and_counted(photos, tmp_path, workers):
    torch.manual_seed(0)
    model = tiny_model('pose')
    bad = osp.basename(photos[1])
    inferencer = PoseInferencer(model, batch_size=2, boxes=_FailOn(bad))
    unreadable = tmp_path / 'broken.jpg'
    unreadable.write_bytes(b'not a jpeg')
    out = list(inferencer.iter_frames(photos + [str(unreadable)],
                                      workers=workers))
    names = [osp.basename(f.name) for f, _ in out]
    assert names == [osp.basename(p) for p in photos if osp.basename(p) != bad]
    failed = inferencer.failed
    assert [osp.basename(name) for name, _ in failed] == [bad]
    assert osp.basename(failed[0][0]) == bad and 'box source broke' in \
        failed[0][1]
    assert inferencer.skipped and inferencer.skipped[0][0] == str(unreadable)


def _record_batches(inferencer, monkeypatch, fail_on=None):
    """Wrap the inferencer's forward: record batch sizes, raise for
    ``fail_on``."""
    sizes, forward = [], inferencer.forward

    def recording(items):
        names = {osp.basename(it['data_samples'].img_path) for it in items}
        if fail_on in names:
            raise RuntimeError(f'forward broke on {fail_on}')
        sizes.append(len(items))
        return forward(items)

    monkeypatch.setattr(inferencer, 'forward', recording)
    return sizes


@pytest.mark.parametrize('batch_size', [3, 4])
def test_pose_batches_are_full_across_frames(photos, box_file, batch_size,
                                             monkeypatch):
    """14 people in photos of 1, 3, 5 and 5; per-frame batching would run
    1, 3, 4+1, 4+1 at batch size 4."""
    torch.manual_seed(0)
    model = tiny_model('pose')
    inferencer = PoseInferencer(model, batch_size=batch_size,
                                boxes=BoxFile(box_file))
    sizes = _record_batches(inferencer, monkeypatch)
    results = inferencer(photos)
    assert sum(len(r.bboxes) for r in results) == 14
    full, rest = divmod(14, batch_size)
    assert sizes == [batch_size] * full + ([rest] if rest else [])


@pytest.mark.parametrize('workers', [1, 3])
def test_forward_failure_skips_only_that_frame(photos, box_file, workers,
                                               monkeypatch):
    torch.manual_seed(0)
    model = tiny_model('pose')
    inferencer = PoseInferencer(model, batch_size=4, boxes=BoxFile(box_file))
    serial = {r.name: r for r in inferencer(photos)}
    bad = osp.basename(photos[1])
    _record_batches(inferencer, monkeypatch, fail_on=bad)
    out = list(inferencer.iter_frames(photos, workers=workers))
    assert [f.name for f, _ in out] == [osp.basename(p) for p in photos
                                        if osp.basename(p) != bad]
    assert [name for name, _ in inferencer.failed] == [bad]
    assert f'forward broke on {bad}' in inferencer.failed[0][1]
    for frame, result in out:  # the frames batched with it are unharmed
        # (re-run in other batches: the GEMMs round differently, ~1e-6 in
        # the heatmaps, < 5e-3 px after DARK; a real difference is >> 1 px)
        np.testing.assert_allclose(result.keypoints,
                                   serial[frame.name].keypoints, atol=5e-3)


def test_workers_keep_order_and_skip_records(tmp_path):
    """Unreadable and damaged files among many photos: frames, skips and
    warnings come out in input order with 4 workers, as serially."""
    from sapiens2_mm.apis import FrameReader
    sources = sorted(n for n in os.listdir(COCO_DIR) if n.endswith('.jpg'))
    names = []
    for i in range(12):
        src = osp.join(COCO_DIR, sources[i % 4])
        name = f'{i:02d}.jpg'
        if i in (3, 8):
            (tmp_path / name).write_bytes(b'not a jpeg')
        elif i == 5:  # truncated: decodes with a warning
            data = open(src, 'rb').read()
            (tmp_path / name).write_bytes(data[:len(data) // 2])
        else:
            shutil.copy(src, tmp_path / name)
        names.append(name)
    torch.manual_seed(0)
    model = tiny_model('seg')
    inferencer = SegInferencer(model, batch_size=2)
    serial_reader = FrameReader(str(tmp_path))
    serial = list(inferencer.iter_frames(None, serial_reader))
    reader = FrameReader(str(tmp_path))
    pipeline = FramePipeline(inferencer, workers=4, prefetch=3)
    piped = list(pipeline.iter_frames(reader))
    assert [f.name for f, _ in piped] == [f.name for f, _ in serial] == [
        n for i, n in enumerate(names) if i not in (3, 8)]
    assert reader.skipped == serial_reader.skipped
    assert [osp.basename(p) for p, _ in reader.skipped] == ['03.jpg',
                                                            '08.jpg']
    assert [osp.basename(p) for p, _ in reader.warnings] == ['05.jpg']
    _assert_identical([r for _, r in serial], [r for _, r in piped])


def test_bad_workers_is_refused():
    model = tiny_model('seg')
    with pytest.raises(ValueError, match=r'workers \(--workers\) must be '
                       r'an integer >= 1, got 0; 1 decodes'):
        SegInferencer(model)(PHOTO, workers=0)
    with pytest.raises(ValueError, match=r'batch_size \(--batch-size\) '
                       r'must be an integer >= 1, got 0'):
        SegInferencer(model, batch_size=0)


@pytest.mark.parametrize('workers', [1, 3])
def test_finish_failure_skips_only_that_frame(photos, box_file, workers,
                                              monkeypatch):
    """Heatmap decoding raising for one photo, on the post workers."""
    torch.manual_seed(0)
    model = tiny_model('pose')
    inferencer = PoseInferencer(model, batch_size=4, boxes=BoxFile(box_file))
    bad = osp.basename(photos[2])
    finish = inferencer.finish

    def broken(frame, context, outputs):
        if frame.name == bad:
            raise RuntimeError('decoding broke')
        return finish(frame, context, outputs)

    monkeypatch.setattr(inferencer, 'finish', broken)
    out = list(inferencer.iter_frames(photos, workers=workers))
    assert [f.name for f, _ in out] == [osp.basename(p) for p in photos
                                        if osp.basename(p) != bad]
    assert inferencer.failed == [(bad, 'RuntimeError: decoding broke')]


def test_predict_raises_the_frames_error():
    """``predict`` (decoded frames, e.g. the --fg-seg masks) raises instead
    of skipping."""
    model = tiny_model('seg')
    inferencer = SegInferencer(model)
    frame = Frame('a.jpg', cv2.imread(PHOTO))
    assert inferencer.predict([frame])[0].label_map.shape == \
        frame.image.shape[:2]
    with pytest.raises(ValueError, match='broke'):
        inferencer.prepare = lambda f: (_ for _ in ()).throw(
            ValueError('broke'))
        inferencer.predict([frame])


def test_documented_python_api_is_exported():
    """docs/inference.md: ``sapiens2_mm.apis.FramePipeline`` and
    ``render_frames``."""
    import sapiens2_mm.apis as apis
    from sapiens2_mm.apis import frame_pipeline
    assert apis.FramePipeline is frame_pipeline.FramePipeline
    assert apis.render_frames is frame_pipeline.render_frames


# ---------------------------------------------------------- StreamBatcher
def _item_frames(counts):
    """Frames named f0, f1, ... with items (frame index, item index)."""
    return [(Frame(f'f{i}', None), f'ctx{i}', [(i, j) for j in range(n)])
            for i, n in enumerate(counts)]


def _run(counts, batch_size, bad=None):
    sizes, failures, done = [], [], []

    def forward(items):
        if any(i == bad for i, _ in items):
            raise RuntimeError('broken')
        sizes.append(len(items))
        return [f'out{i}.{j}' for i, j in items]

    batcher = StreamBatcher(batch_size, forward,
                            lambda frame, err: failures.append(frame.name))
    for frame in _item_frames(counts):
        done += batcher.add(*frame)
    done += batcher.flush()
    return sizes, failures, done


def test_batches_are_full_and_outputs_stay_with_their_frames():
    sizes, failures, done = _run([1, 3, 5, 5, 0], batch_size=4)
    assert sizes == [4, 4, 4, 2] and not failures
    assert [f.name for f, _, _ in done] == ['f0', 'f1', 'f2', 'f3', 'f4']
    for i, (_, ctx, outputs) in enumerate(done):
        assert ctx == f'ctx{i}'
        assert outputs == [f'out{i}.{j}' for j in range(len(outputs))]
    assert [len(o) for _, _, o in done] == [1, 3, 5, 5, 0]


def test_frames_are_released_as_soon_as_complete():
    batcher = StreamBatcher(2, lambda items: list(items), lambda f, e: None)
    frames = _item_frames([1, 2, 1])
    assert batcher.add(*frames[0]) == []          # 1 item waiting
    assert [f.name for f, _, _ in batcher.add(*frames[1])] == ['f0']
    assert [f.name for f, _, _ in batcher.add(*frames[2])] == ['f1', 'f2']
    assert batcher.flush() == []


def test_failing_frame_is_dropped_and_its_batch_mates_kept():
    # batch 1: f0's item and f1's 3 items -> fails, re-run per frame.
    sizes, failures, done = _run([1, 3, 2], batch_size=4, bad=1)
    assert failures == ['f1']
    assert [f.name for f, _, _ in done] == ['f0', 'f2']
    assert done[0][2] == ['out0.0'] and done[1][2] == ['out2.0', 'out2.1']
    assert sizes == [1, 2]  # f0 alone on retry, then f2's flush


# ------------------------------------------------------------ ordered_map
def _slow_square(i):
    # later items finish first: 0 sleeps longest
    time.sleep(0.002 * (10 - i % 10))
    return i * i, threading.current_thread().name


def test_results_keep_input_order_across_threads():
    out = list(ordered_map(_slow_square, range(40), workers=4))
    assert [v for v, _ in out] == [i * i for i in range(40)]
    threads = {name for _, name in out}
    assert len(threads) > 1 and all('sapiens2-prep' in t for t in threads)


def test_one_worker_runs_inline():
    out = list(ordered_map(_slow_square, range(3), workers=1))
    assert {name for _, name in out} == {threading.current_thread().name}


def test_error_is_raised_at_its_items_turn():
    def fn(i):
        if i == 5:
            raise RuntimeError('item 5 broke')
        return i

    got = []
    with pytest.raises(RuntimeError, match='item 5 broke'):
        for value in ordered_map(fn, range(10), workers=3):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]


def test_closing_early_stops_submitting():
    calls = []

    def fn(i):
        calls.append(i)
        time.sleep(0.01)
        return i

    stream = ordered_map(fn, range(1000), workers=2, ahead=4)
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()
    # the three taken plus at most the window in flight
    assert len(calls) <= 3 + 4 + 2


@pytest.mark.parametrize('bad', [0, -1, 1.5, True, None])
def test_bad_worker_count_is_refused(bad):
    with pytest.raises(ValueError, match='workers .* must be an integer'):
        check_workers(bad)
    with pytest.raises(ValueError, match='batch_size .* must be an integer'):
        check_batch_size(bad)


def test_default_workers_in_range():
    assert 1 <= default_workers() <= 4


# ---------------------------------------------------------- render_frames
def _frames(n, video_from=None):
    image = cv2.imread(PHOTO)
    out = []
    for i in range(n):
        if video_from is not None and i >= video_from:
            frame = Frame(f'clip_{i:06d}.jpg', image, video='clip.mp4',
                          frame_index=i, video_name='clip.mp4')
        else:
            frame = Frame(f'{i:02d}.png' if i % 2 else f'{i:02d}.jpg', image)
        out.append((frame, i))
    return out


def _draw(frame, result):
    time.sleep(0.002 * (5 - result % 5))  # later frames finish first
    if result == 4:
        raise RuntimeError('drawing broke')
    return np.roll(frame.image, result, axis=1)


@pytest.mark.parametrize('workers', [1, 3])
def test_order_bytes_and_failures(workers, tmp_path):
    frames = _frames(9, video_from=6)
    out = list(render_frames(frames, _draw, workers))
    assert [r.result for r in out] == list(range(9))
    assert out[4].error == 'RuntimeError: drawing broke'
    assert out[4].image is None and out[4].encoded is None
    for r in out:
        if r.result == 4:
            continue
        assert r.error is None
        np.testing.assert_array_equal(r.image, np.roll(r.frame.image,
                                                       r.result, axis=1))
        if r.frame.video_name is not None:
            assert r.encoded is None  # video frames go to the VideoWriter
            continue
        # the same bytes cv2.imwrite writes for that name
        ref = tmp_path / r.frame.name
        assert cv2.imwrite(str(ref), r.image)
        assert ref.read_bytes() == r.encoded


def test_no_drawing_passes_frames_through():
    out = list(render_frames(_frames(3), None, 2))
    assert [(r.result, r.image, r.encoded, r.error) for r in out] == [
        (i, None, None, None) for i in range(3)]


class _Counting:
    """A model-free inferencer: ``n`` items per frame, results = names."""

    def __init__(self, items=2, batch_size=3, fail_forward=False):
        self.items, self.batch_size = items, batch_size
        self.fail_forward = fail_forward

    def prepare(self, frame):
        return frame.name, list(range(self.items))

    def forward(self, items):
        if self.fail_forward:
            raise KeyboardInterrupt
        time.sleep(0.001)
        return [i * 10 for i in items]

    def finish(self, frame, context, outputs):
        return context, outputs


def _stream(n):
    image = np.zeros((2, 2, 3), np.uint8)
    return [Frame(f'{i:03d}.png', image) for i in range(n)]


@pytest.mark.parametrize('workers,overlap', [(1, False), (1, True),
                                             (3, True)])
def test_pipeline_serial_and_overlapped_give_the_same_stream(workers, overlap):
    out = list(FramePipeline(_Counting(), workers, overlap, prefetch=2).iter_frames(
        _stream(25)))
    assert [r for _, r in out] == [(f'{i:03d}.png', [0, 10])
                                   for i in range(25)]


def test_closing_early_ends_every_stage_thread():
    before = set(threading.enumerate())
    stream = FramePipeline(_Counting(), 3, prefetch=1).iter_frames(_stream(200))
    assert next(stream)[1][0] == '000.png'
    stream.close()  # returns once it has joined every stage thread
    assert set(threading.enumerate()) <= before


def test_ctrl_c_in_the_model_thread_reaches_the_caller():
    before = set(threading.enumerate())
    pipeline = FramePipeline(_Counting(fail_forward=True), 2, prefetch=2)
    with pytest.raises(KeyboardInterrupt):
        list(pipeline.iter_frames(_stream(10)))
    # raised once every stage thread is joined: none is left
    assert set(threading.enumerate()) <= before
