"""The mask sources of the dense tasks run their steps inside the dense
inferencer's: with ``fg_seg`` the seg model's post-processing (resize +
argmax) is CPU work of ``finish``, not of the network's thread."""
import os.path as osp
import threading

import numpy as np
import pytest

from sapiens2_mm.apis import (
    FrameReader,
    SegInferencer,
    SegModelMasks,
    build_inferencer,
    init_model,
)
from tests.conftest import DATA_DIR
from tests.test_apis.tiny_configs import tiny_config

PHOTOS = [osp.join(DATA_DIR, 'dense_sample', 'rgb', f'scene_0000{i}.png')
          for i in range(4)]

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(scope='module')
def models():
    return init_model(tiny_config('normal')), init_model(tiny_config('seg'))


def test_fg_seg_post_processing_runs_on_the_post_workers(models,
                                                         monkeypatch):
    """Overlapped (a model thread, 2 post workers): every seg ``finish``
    runs off the model thread, and the masks are the seg model's labels >
    0 on each photo, as its own inferencer gives them."""
    normal, seg = models
    threads = []
    finish = SegInferencer.finish

    def recording(self, frame, context, outputs):
        threads.append(threading.current_thread().name)
        return finish(self, frame, context, outputs)

    monkeypatch.setattr(SegInferencer, 'finish', recording)
    inferencer = build_inferencer(normal, fg_seg=seg, batch_size=3)
    assert isinstance(inferencer.foreground, SegModelMasks)
    pairs = list(inferencer.iter_frames(PHOTOS, workers=2, overlap=True))
    assert len(threads) == len(PHOTOS)
    assert not [t for t in threads if t == 'sapiens2-model'], threads
    alone = SegInferencer(seg).predict(list(FrameReader(PHOTOS)))
    for (_, result), labels in zip(pairs, alone):
        assert result.foreground_source == 'fg_seg'
        np.testing.assert_array_equal(result.foreground,
                                      labels.label_map > 0)


def test_fg_seg_forward_batches_the_frames_of_the_dense_batch(models,
                                                              monkeypatch):
    """The seg network runs on the dense batch's frames, in batches of the
    seg inferencer's own size."""
    normal, seg = models
    seg_inferencer = SegInferencer(seg, batch_size=2)
    sizes = []
    forward = seg_inferencer.forward

    def recording(items):
        sizes.append(len(items))
        return forward(items)

    monkeypatch.setattr(seg_inferencer, 'forward', recording)
    inferencer = build_inferencer(normal, fg_seg=seg_inferencer,
                                  batch_size=3)
    assert len(inferencer(PHOTOS)) == 4
    assert sizes == [2, 1, 1]  # dense batches of 3 and 1 frames


def test_a_config_pair_is_loaded_by_build_inferencer_only(models):
    normal, _ = models
    pair = (tiny_config('seg'), None)
    inferencer = build_inferencer(normal, fg_seg=pair)
    assert inferencer.foreground.inferencer.model.task == 'seg'
    with pytest.raises(ValueError, match='DenseInferencer takes fg_seg as a '
                       'seg model or a SegInferencer'):
        type(inferencer)(normal, fg_seg=pair)
