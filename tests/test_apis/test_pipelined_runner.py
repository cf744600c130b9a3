"""The overlapped pipeline gives the serial inferencer's results, in order."""
import json
import os
import os.path as osp
import shutil

import numpy as np
import pytest
import torch

from sapiens2_mm.apis import (
    BoxFile,
    PoseInferencer,
    SegInferencer,
    WholeImageBoxes,
    init_model,
)
from sapiens2_mm.apis.pipelined_runner import PipelinedRunner
from tests.conftest import DATA_DIR
from tests.test_apis.tiny_configs import tiny_config

COCO = osp.join(DATA_DIR, 'coco_sample')


@pytest.fixture(scope='module')
def photos():
    return sorted(osp.join(COCO, n) for n in
                  ('000000000785.jpg', '000000040083.jpg',
                   '000000196141.jpg', '000000197388.jpg'))


@pytest.fixture()
def box_file(tmp_path):
    with open(osp.join(COCO, 'test_coco.json')) as f:
        coco = json.load(f)
    names = {im['id']: im['file_name'] for im in coco['images']}
    boxes = {}
    for ann in coco['annotations']:
        x, y, w, h = ann['bbox']
        boxes.setdefault(names[ann['image_id']], []).append(
            [x, y, x + w, y + h])
    path = tmp_path / 'boxes.json'
    path.write_text(json.dumps(boxes))
    return str(path)


@pytest.mark.parametrize('flip_test,workers', [(False, 1), (True, 1),
                                                    (True, 3)])
def test_pose_pipeline_equals_serial(photos, box_file, flip_test,
                                     workers):
    torch.manual_seed(0)
    model = init_model(tiny_config('pose'))
    # batch_size 3 crops: batches mix the people of different photos.
    inferencer = PoseInferencer(model, batch_size=3, flip_test=flip_test,
                                boxes=BoxFile(box_file))
    serial = inferencer(photos)
    piped = PipelinedRunner(inferencer, workers=workers)(photos)
    assert [r.name for r in piped] == [osp.basename(p) for p in photos]
    assert sum(len(r.bboxes) for r in piped) == 14  # every COCO person
    for a, b in zip(serial, piped):
        assert a.name == b.name
        np.testing.assert_array_equal(a.bboxes, b.bboxes)
        # Crops are batched differently (across photos): the GEMMs then
        # round differently (heatmaps equal to ~1e-6) and DARK's sub-pixel
        # step turns that into < 5e-3 px; a real difference is >> 1 px.
        np.testing.assert_allclose(b.keypoints, a.keypoints, atol=5e-3)
        np.testing.assert_allclose(b.keypoint_scores, a.keypoint_scores,
                                   atol=1e-5)


def test_seg_pipeline_equals_serial(photos):
    torch.manual_seed(0)
    model = init_model(tiny_config('seg'))
    inferencer = SegInferencer(model, batch_size=3, flip_test=True)
    serial = inferencer(photos)
    piped = PipelinedRunner(inferencer)(photos)
    assert [r.name for r in piped] == [r.name for r in serial]
    assert len(piped) == 4
    for a, b in zip(serial, piped):
        assert a.label_map.shape == b.label_map.shape
        assert (a.label_map == b.label_map).mean() > 0.9999


class _FailOn:
    """Whole-image boxes, raising for one frame (a broken box source)."""

    def __init__(self, name):
        self.name = name

    def __call__(self, frame):
        if osp.basename(frame.name) == self.name:
            raise RuntimeError('box source broke')
        return WholeImageBoxes()(frame)


@pytest.mark.parametrize('workers', [1, 3])
def test_failing_frame_is_skipped_and_counted(photos, tmp_path,
                                              workers):
    torch.manual_seed(0)
    model = init_model(tiny_config('pose'))
    bad = osp.basename(photos[1])
    inferencer = PoseInferencer(model, batch_size=2, boxes=_FailOn(bad))
    unreadable = tmp_path / 'broken.jpg'
    unreadable.write_bytes(b'not a jpeg')
    seen = []
    runner = PipelinedRunner(inferencer, prefetch=2,
                             workers=workers)
    out = list(runner.iter_frames(
        photos + [str(unreadable)],
        on_failure=lambda f, r: seen.append(osp.basename(f.name))))
    names = [osp.basename(f.name) for f, _ in out]
    assert names == [osp.basename(p) for p in photos if osp.basename(p) != bad]
    assert seen == [bad]
    assert osp.basename(runner.failed[0][0]) == bad and 'box source broke' in \
        runner.failed[0][1]
    assert inferencer.skipped and inferencer.skipped[0][0] == str(unreadable)


def _record_batches(runner, fail_on=None):
    """Wrap the runner's forward: record batch sizes, raise for ``fail_on``."""
    sizes, forward = [], runner.stages.forward

    def recording(items):
        names = {osp.basename(it['data_samples'].img_path) for it in items}
        if fail_on in names:
            raise RuntimeError(f'forward broke on {fail_on}')
        sizes.append(len(items))
        return forward(items)

    runner.stages.forward = recording
    return sizes


@pytest.mark.parametrize('batch_size', [3, 4])
def test_pose_batches_are_full_across_frames(photos, box_file, batch_size):
    """14 people in photos of 1, 3, 5 and 5; per-frame batching would run
    1, 3, 4+1, 4+1 at batch size 4."""
    torch.manual_seed(0)
    model = init_model(tiny_config('pose'))
    inferencer = PoseInferencer(model, batch_size=batch_size,
                                boxes=BoxFile(box_file))
    runner = PipelinedRunner(inferencer)
    sizes = _record_batches(runner)
    results = runner(photos)
    assert sum(len(r.bboxes) for r in results) == 14
    full, rest = divmod(14, batch_size)
    assert sizes == [batch_size] * full + ([rest] if rest else [])


def test_forward_failure_skips_only_that_frame(photos, box_file):
    torch.manual_seed(0)
    model = init_model(tiny_config('pose'))
    inferencer = PoseInferencer(model, batch_size=4, boxes=BoxFile(box_file))
    serial = {r.name: r for r in inferencer(photos)}
    bad = osp.basename(photos[1])
    runner = PipelinedRunner(inferencer)
    _record_batches(runner, fail_on=bad)
    seen = []
    out = list(runner.iter_frames(
        photos, on_failure=lambda f, r: seen.append(osp.basename(f.name))))
    assert [f.name for f, _ in out] == [osp.basename(p) for p in photos
                                        if osp.basename(p) != bad]
    assert seen == [bad] and len(runner.failed) == 1
    assert f'forward broke on {bad}' in runner.failed[0][1]
    for frame, result in out:  # the frames batched with it are unharmed
        np.testing.assert_allclose(result.keypoints,
                                   serial[frame.name].keypoints, atol=5e-3)


def test_workers_keep_order_and_skip_records(tmp_path):
    """Unreadable and damaged files among many photos: frames, skips and
    warnings come out in input order with 4 workers, as serially."""
    from sapiens2_mm.apis import FrameReader
    sources = sorted(n for n in os.listdir(COCO) if n.endswith('.jpg'))
    names = []
    for i in range(12):
        src = osp.join(COCO, sources[i % 4])
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
    model = init_model(tiny_config('seg'))
    inferencer = SegInferencer(model, batch_size=2)
    serial_reader = FrameReader(str(tmp_path))
    serial = list(inferencer.iter_frames(None, serial_reader))
    reader = FrameReader(str(tmp_path))
    runner = PipelinedRunner(inferencer, workers=4, prefetch=3)
    piped = list(runner.iter_frames(None, reader))
    assert [f.name for f, _ in piped] == [f.name for f, _ in serial] == [
        n for i, n in enumerate(names) if i not in (3, 8)]
    assert reader.skipped == serial_reader.skipped
    assert [osp.basename(p) for p, _ in reader.skipped] == ['03.jpg',
                                                            '08.jpg']
    assert [osp.basename(p) for p, _ in reader.warnings] == ['05.jpg']
    for (_, a), (_, b) in zip(serial, piped):
        assert (a.label_map == b.label_map).mean() > 0.9999


def test_bad_workers_is_refused():
    model = init_model(tiny_config('seg'))
    with pytest.raises(ValueError, match='workers must be an integer'):
        PipelinedRunner(SegInferencer(model), workers=0)


@pytest.mark.parametrize('workers', [1, 3])
def test_finish_failure_skips_only_that_frame(photos, box_file, workers):
    """Heatmap decoding raising for one photo, on the post workers."""
    torch.manual_seed(0)
    model = init_model(tiny_config('pose'))
    inferencer = PoseInferencer(model, batch_size=4, boxes=BoxFile(box_file))
    bad = osp.basename(photos[2])
    runner = PipelinedRunner(inferencer, workers=workers)
    finish = runner.stages.finish

    def broken(frame, context, outputs):
        if frame.name == bad:
            raise RuntimeError('decoding broke')
        return finish(frame, context, outputs)

    runner.stages.finish = broken
    out = list(runner.iter_frames(photos))
    assert [f.name for f, _ in out] == [osp.basename(p) for p in photos
                                        if osp.basename(p) != bad]
    assert runner.failed == [(bad, 'RuntimeError: decoding broke')]


def test_documented_python_api_is_exported():
    """docs/inference.md: ``sapiens2_mm.apis.PipelinedRunner`` and
    ``render_frames``."""
    import sapiens2_mm.apis as apis
    from sapiens2_mm.apis import pipelined_runner, render_stage
    assert apis.PipelinedRunner is pipelined_runner.PipelinedRunner
    assert apis.render_frames is render_stage.render_frames
