"""The frame pipeline: an inferencer's ``prepare`` / ``forward`` / ``finish``
over a stream of frames.

One composition of the three steps of a task inferencer
(:class:`~sapiens2_mm.apis.BaseInferencer`), used by the Python API and by
``tools/infer.py``::

    read + prepare   frames decoded (images, video frames), then the task's
                     CPU work (boxes, top-down crops / resize)   -> prepared
    forward          items of consecutive frames cut into full batches (a
                     frame's people may span two batches), the
                     network under no_grad                        -> computed
    finish           the task's CPU work after the network (heatmap
                     decoding, resize + argmax)                  -> results
    render           (tools/infer.py) drawing and encoding, :func:`render_frames`

Serially (``overlap=False``) the stages are chained generators on the calling
thread. Overlapped, each stage runs on a thread of its own, connected by
bounded queues, and read + prepare, finish and render hand their work to
``workers`` threads (:func:`ordered_map`, input order kept), so decoding the
next frames, decoding the last heatmaps and writing the last results happen
while the network runs. Threads, not processes: cv2 decoding / warping and
torch ops release the GIL, frames need no pickling and the reader's skip /
warning lists stay in this process. Both ways run the same code, with the
same batches, so they give the same results.

A frame that fails is skipped and counted, never stopping the others: an
error in its ``prepare`` or ``finish`` fails that frame; a batch whose
``forward`` raises is re-run one frame at a time (:class:`StreamBatcher`).
"""
import os
import queue
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Deque,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
)

import numpy as np
import torch

from ..utils.user_errors import OptionError
from .inputs import Frame, Loaded
from .writers import encode_image


def default_workers() -> int:
    """Threads per CPU stage (read, post-processing, drawing): half the
    cores, 1 to 4 (1 on the 2-core CPUs where the network needs both)."""
    return max(1, min(4, (os.cpu_count() or 1) // 2))


def check_workers(workers: int) -> int:
    """``workers`` (``--workers``) if it is an int >= 1, else a ValueError
    saying so: the one check of the value, for the API and the tool."""
    if not isinstance(workers, int) or isinstance(workers, bool) \
            or workers < 1:
        raise OptionError(f'workers (--workers) must be an integer >= 1, got '
                         f'{workers!r}; 1 decodes and draws in one thread.')
    return workers


def check_batch_size(batch_size: int) -> int:
    """``batch_size`` (``--batch-size``) if it is an int >= 1, else a
    ValueError saying so: the one check of the value, for the API and the
    tool."""
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) \
            or batch_size < 1:
        raise OptionError(f'batch_size (--batch-size) must be an integer >= '
                         f'1, got {batch_size!r}.')
    return batch_size


def ordered_map(fn: Callable, items: Iterable, workers: int,
                ahead: Optional[int] = None) -> Iterator:
    """``fn(item)`` for every item, computed on ``workers`` threads.

    The CPU stages (decoding photos and cutting crops, heatmap decoding or
    resize + argmax, drawing and encoding) each become the bottleneck on one
    thread when the network is fast (a GPU) and the photos large (a 12 MP
    JPEG takes about 0.1 s to decode); cv2 and torch release the GIL, so
    threads scale on them without copying frames between processes.

    Args:
        fn: called once per item; an exception it raises is re-raised here
            when its item's turn comes (catch per-item errors inside ``fn``
            to skip an item instead).
        items: consumed on the calling thread, ``ahead`` items before the
            result of the oldest is yielded.
        workers: threads (1: ``fn`` runs inline, no pool).
        ahead: items in flight (default ``2 * workers``).

    Yields:
        The results in the order of ``items`` (item ``i`` before ``i + 1``
        however the threads finish). Closing the generator early cancels the
        items not started and waits for the running ones.
    """
    check_workers(workers)
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    ahead = max(workers, ahead or 2 * workers)
    pool = ThreadPoolExecutor(workers, thread_name_prefix='sapiens2-prep')
    pending = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Pending:
    """A frame whose items are (partly) still waiting for the network."""

    def __init__(self, frame: Frame, context, items: list) -> None:
        self.frame, self.context = frame, context
        self.outputs: List = [None] * len(items)
        self.missing = len(items)
        self.failed = False


class StreamBatcher:
    """Cut the items of consecutive frames into full batches.

    Items are queued across frame boundaries, so every forward gets
    ``batch_size`` items (the last one of the stream excepted), whatever the
    number of people per frame. Frames are released in input order as soon
    as all their outputs exist: :meth:`add` and :meth:`flush` return the
    finished ``(frame, context, outputs)`` triples.

    A batch whose forward raises is re-run frame by frame (that frame's items
    of the batch alone); a frame that still fails is reported through
    ``on_failure(frame, error)``, its other items are dropped and it is not
    released.
    """

    def __init__(self, batch_size: int, forward: Callable[[list], list],
                 on_failure: Callable[[Frame, BaseException], None]) -> None:
        self.batch_size = batch_size
        self.forward = forward
        self.on_failure = on_failure
        self.frames: Deque[_Pending] = deque()
        self.queued: list = []

    def add(self, frame: Frame, context, items: list) -> list:
        """Queue one frame's items; run every full batch."""
        pending = _Pending(frame, context, items)
        self.frames.append(pending)
        self.queued += [(pending, i, item) for i, item in enumerate(items)]
        while len(self.queued) >= self.batch_size:
            batch = self.queued[:self.batch_size]
            self.queued = self.queued[self.batch_size:]
            self._run(batch)
        return self._release()

    def flush(self) -> list:
        """Run the last, partial batch; release every remaining frame."""
        batch, self.queued = self.queued, []
        if batch:
            self._run(batch)
        return self._release()

    def _run(self, batch: list) -> None:
        batch = [entry for entry in batch if not entry[0].failed]
        if not batch:
            return
        try:
            self._store(batch, self.forward([item for _, _, item in batch]))
            return
        except Exception:  # noqa: BLE001 - isolated below, frame by frame
            pass
        for pending in dict.fromkeys(p for p, _, _ in batch):
            mine = [entry for entry in batch if entry[0] is pending]
            try:
                outputs = self.forward([item for _, _, item in mine])
            except Exception as err:  # noqa: BLE001 - skip and count
                pending.failed = True
                self.on_failure(pending.frame, err)
                continue
            self._store(mine, outputs)

    @staticmethod
    def _store(batch: list, outputs: list) -> None:
        for (pending, index, _), output in zip(batch, outputs):
            pending.outputs[index] = output
            pending.missing -= 1

    def _release(self) -> list:
        done = []
        while self.frames and (self.frames[0].missing == 0
                               or self.frames[0].failed):
            pending = self.frames.popleft()
            if not pending.failed:
                done.append((pending.frame, pending.context, pending.outputs))
        return done


_END = object()


def _on_thread(items: Iterator, size: int, stop: threading.Event,
               threads: list, name: str) -> Iterator:
    """Iterate ``items`` on a new thread, at most ``size`` ahead of the
    caller; its exception is re-raised in the caller. ``stop`` ends it."""
    out: queue.Queue = queue.Queue(size)

    def put(value) -> bool:
        while not stop.is_set():
            try:
                out.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            with closing(items):
                for value in items:
                    if not put(value):
                        return
            put(_END)
        except BaseException as err:  # noqa: BLE001 - re-raised by caller
            put(err)  # stage values are frames and tuples, never exceptions

    thread = threading.Thread(target=run, name=name, daemon=True)
    threads.append(thread)
    thread.start()
    while not stop.is_set():
        try:
            value = out.get(timeout=0.1)
        except queue.Empty:
            continue
        if value is _END:
            return
        if isinstance(value, BaseException):
            raise value
        yield value


class FramePipeline:
    """Compose an inferencer's three steps over frames (module docstring).

    Not mmengine's ``Runner`` (training and testing loops): this drives one
    inference model over a stream of frames.

    Args:
        inferencer: a task inferencer; its ``batch_size`` counts model items
            (pose: person crops) per forward, gathered across frames.
        workers: threads for read + prepare, finish (and
            :func:`render_frames`) each; 1 runs them inline.
        overlap: run the stages on threads of their own (default: when
            ``workers > 1``).
        prefetch: frames decoded and prepared ahead of the network.
        failures: the list that receives ``(frame name, "Type: message")``
            for every frame that fails (the caller's; the pipeline keeps
            none of its own).
        strict: raise a frame's error instead of skipping the frame.
    """

    def __init__(self, inferencer, workers: int = 1,
                 overlap: Optional[bool] = None, prefetch: int = 8,
                 failures: Optional[List[Tuple[str, str]]] = None,
                 strict: bool = False) -> None:
        if prefetch < 1:
            raise OptionError(f'prefetch must be >= 1, got {prefetch}.')
        self.inferencer = inferencer
        self.workers = check_workers(workers)
        self.overlap = workers > 1 if overlap is None else overlap
        self.prefetch = prefetch
        self.failures = failures if failures is not None else []
        self.strict = strict

    def _fail(self, frame: Frame, err: BaseException) -> None:
        if self.strict:
            raise err
        self.failures.append((frame.name, f'{type(err).__name__}: {err}'))

    # -- the stages ----------------------------------------------------------
    def _load_and_prepare(self, job):
        """(loaded, (context, items) or None, prepare error or None)."""
        loaded = job()
        if loaded.frame is None:
            return loaded, None, None
        try:
            return loaded, self.inferencer.prepare(loaded.frame), None
        except Exception as err:  # noqa: BLE001 - skipped and counted
            return loaded, None, err

    def _prepared(self, reader) -> Iterator:
        # A FrameReader hands out decode jobs (photos decode on the
        # workers); any other iterable of frames is decoded as iterated.
        jobs = reader.jobs() if hasattr(reader, 'jobs') else (
            (lambda f=f: Loaded(f)) for f in reader)
        record = getattr(reader, 'record', lambda loaded: loaded.frame)
        steps = ordered_map(self._load_and_prepare, jobs, self.workers,
                            self.prefetch)
        with closing(steps):
            for loaded, prepared, err in steps:
                frame = record(loaded)
                if frame is None:
                    continue
                if err is not None:
                    self._fail(frame, err)
                    continue
                yield (frame, *prepared)

    def _forward(self, items: list) -> list:
        with torch.no_grad():
            return self.inferencer.forward(items)

    def _computed(self, prepared: Iterator) -> Iterator:
        batcher = StreamBatcher(self.inferencer.batch_size, self._forward,
                                self._fail)
        try:
            for entry in prepared:
                yield from batcher.add(*entry)
        except Exception:
            if not self.strict:  # the frames read before the error
                yield from batcher.flush()
            raise
        yield from batcher.flush()

    def _finish(self, entry):
        """(frame, result or None, error or None)."""
        frame, context, outputs = entry
        try:
            return frame, self.inferencer.finish(frame, context, outputs), None
        except Exception as err:  # noqa: BLE001 - skipped and counted
            return frame, None, err

    def _finished(self, computed: Iterator) -> Iterator:
        raised = []

        def entries():
            try:
                yield from computed
            except Exception as err:  # noqa: BLE001 - after the others
                raised.append(err)

        steps = ordered_map(self._finish, entries(), self.workers,
                            self.prefetch)
        with closing(steps):
            for frame, result, err in steps:
                if err is not None:
                    self._fail(frame, err)
                    continue
                yield frame, result
        if raised:
            raise raised[0]

    # -- public --------------------------------------------------------------
    def iter_frames(self, reader: Iterable) -> Iterator:
        """Yield ``(frame, result)`` for the frames of ``reader`` (a
        :class:`~sapiens2_mm.apis.FrameReader` or an iterable of frames), in
        input order, failures skipped (and listed in :attr:`failures`)."""
        if not self.overlap:
            yield from self._finished(self._computed(self._prepared(reader)))
            return
        stop, threads = threading.Event(), []
        size = self.prefetch

        def staged(items, name):
            return _on_thread(items, size, stop, threads, f'sapiens2-{name}')

        try:
            yield from staged(self._finished(staged(self._computed(
                staged(self._prepared(reader), 'read')), 'model')), 'post')
        finally:
            stop.set()
            for thread in threads:
                thread.join()


@dataclass
class Rendered:
    """A finished frame with its drawing.

    Attributes:
        frame / result: the frame and the task's result.
        image: the drawing, ``None`` without one (``--no-vis``, or a task
            that draws nothing).
        encoded: the drawing's image-file bytes (frames that are not video
            frames).
        error: why drawing failed ("Type: message"); the frame is then left
            out, as when the writer fails.
    """
    frame: Frame
    result: Any
    image: Optional[np.ndarray] = None
    encoded: Optional[bytes] = None
    error: Optional[str] = None


def render_frames(frames: Iterable,
                  draw: Optional[Callable[[Frame, Any], Optional[np.ndarray]]],
                  workers: int) -> Iterator[Rendered]:
    """``draw(frame, result)`` and its image encoding for every finished
    frame, on ``workers`` threads, in input order (the caller writes the
    files one frame at a time, in order: a video's frames are appended in
    order and the index lists finished frames).

    Args:
        frames: ``(frame, result)`` pairs (:meth:`FramePipeline.iter_frames`).
        draw: the task's drawing, or ``None`` to draw nothing.
        workers: threads (1: on the calling thread).
    """
    def render(pair) -> Rendered:
        frame, result = pair
        if draw is None:
            return Rendered(frame, result)
        try:
            image = draw(frame, result)
            encoded = None
            if image is not None and frame.video_name is None:
                encoded = encode_image(frame.name, image)
            return Rendered(frame, result, image, encoded)
        except Exception as err:  # noqa: BLE001 - the frame is skipped
            return Rendered(frame, result, error=f'{type(err).__name__}: '
                            f'{err}')

    return ordered_map(render, frames, workers)
