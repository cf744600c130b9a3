"""StreamBatcher: full batches across frames, order and failure isolation."""
from sapiens2_mm.apis.inputs import Frame
from sapiens2_mm.apis.stream_batcher import StreamBatcher


def _frames(counts):
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
    for frame in _frames(counts):
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
    frames = _frames([1, 2, 1])
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
