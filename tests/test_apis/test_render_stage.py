"""Drawing + encoding on worker threads: input order, imwrite's bytes,
failures isolated to their frame."""
import os.path as osp
import time

import cv2
import numpy as np
import pytest

from sapiens2_mm.apis.inputs import Frame
from sapiens2_mm.apis.render_stage import render_frames
from tests.conftest import DATA_DIR

PHOTO = osp.join(DATA_DIR, 'coco_sample', '000000040083.jpg')


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
