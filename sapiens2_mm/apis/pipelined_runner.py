"""Overlapped inference: the network never waits for decoding or writing.

Four stages connected by bounded queues, each with a thread of its own (the
reader and post stages hand their work to ``workers`` threads and keep the
input order, :func:`~sapiens2_mm.apis.ordered_pool.ordered_map`)::

    reader      frames decoded (images, video frames) + prepare stage
                (boxes, top-down crops / resize), on
                ``workers`` threads, in order                -> prepared
    model       items of consecutive frames cut into full batches
                (a frame's people may span two batches),
                ``forward`` under no_grad                    -> computed
    post        ``finish`` stage (heatmap decoding, resize
                + argmax), on ``workers`` threads, in order  -> results
    caller      whatever consumes :meth:`iter_frames` (tools/infer.py
                draws on its own ``workers`` threads and writes the files,
                :mod:`~sapiens2_mm.apis.render_stage`)

so decoding the next frames, decoding the last heatmaps and writing the last
results all happen while the network runs. Threads, not processes: cv2
decoding/warping and torch ops release the GIL, frames need no pickling and
the reader's skip/warning lists stay in this process. Results come out in
input order, identical to :meth:`BaseInferencer.iter_frames` (the stages
call the same steps; see :mod:`sapiens2_mm.apis.pipeline_stages`).

A failing frame is skipped and counted exactly as on the serial path: a
batch whose forward raises is re-run one frame at a time.
"""
import queue
import threading
from contextlib import closing
from typing import Callable, Iterator, List, Optional

import torch

from .inputs import Frame, FrameReader, Loaded
from .ordered_pool import check_workers, default_workers, ordered_map
from .pipeline_stages import stages_for
from .stream_batcher import StreamBatcher

_END = object()


class _Failed:
    """An exception of a pipeline thread, re-raised in the caller."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class PipelinedRunner:
    """Run an inferencer's stages overlapped (see the module docstring).

    Args:
        inferencer: a task inferencer (``PoseInferencer``, ...); its
            ``batch_size`` counts model items (pose: person crops) per
            forward, gathered across frames.
        prefetch: frames decoded and prepared ahead of the network.
        workers: threads decoding photos and preparing frames (boxes,
            crops, resizing), and as many finishing them (heatmap decoding,
            resize + argmax); default half the cores, 1 to 4
            (:func:`~sapiens2_mm.apis.ordered_pool.default_workers`).
    """

    def __init__(self, inferencer, prefetch: int = 8,
                 workers: Optional[int] = None) -> None:
        if prefetch < 1:
            raise ValueError(f'prefetch must be >= 1, got {prefetch}.')
        self.inferencer = inferencer
        self.stages = stages_for(inferencer)
        self.batch_size = inferencer.batch_size
        self.prefetch = prefetch
        self.workers = check_workers(
            default_workers() if workers is None else workers)
        self.failed: List = []

    # -- threads ------------------------------------------------------------
    def _put(self, q: queue.Queue, value, stop: threading.Event) -> bool:
        while not stop.is_set():
            try:
                q.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _get(self, q: queue.Queue, stop: threading.Event):
        while not stop.is_set():
            try:
                return q.get(timeout=0.1)
            except queue.Empty:
                continue
        return _END

    def _fail(self, frame: Frame, err: BaseException) -> None:
        reason = f'{type(err).__name__}: {err}'
        self.failed.append((frame.name, reason))
        if self._on_failure is not None:
            self._on_failure(frame, reason)

    def _load_and_prepare(self, job):
        """(loaded, (context, items) or None, prepare error or None); runs
        on the read-worker threads."""
        loaded = job()
        if loaded.frame is None:
            return loaded, None, None
        try:
            return loaded, self.stages.prepare(loaded.frame), None
        except Exception as err:  # noqa: BLE001 - skipped and counted
            return loaded, None, err

    def _reader(self, reader, out: queue.Queue, stop) -> None:
        try:
            # A FrameReader hands out decode jobs (photos decode on the
            # workers); any other iterable of frames is decoded as iterated.
            jobs = reader.jobs() if hasattr(reader, 'jobs') else (
                (lambda f=f: Loaded(f)) for f in reader)
            record = getattr(reader, 'record', lambda loaded: loaded.frame)
            steps = ordered_map(self._load_and_prepare, jobs,
                                self.workers, self.prefetch)
            with closing(steps):
                for loaded, prepared, err in steps:
                    if stop.is_set():
                        return
                    frame = record(loaded)
                    if frame is None:
                        continue
                    if err is not None:
                        self._fail(frame, err)
                        continue
                    if not self._put(out, (frame, *prepared), stop):
                        return
            self._put(out, _END, stop)
        except BaseException as err:  # noqa: BLE001 - re-raised by caller
            self._put(out, _Failed(err), stop)

    def _forward(self, items: list) -> list:
        with torch.no_grad():
            return self.stages.forward(items)

    def _model(self, inq: queue.Queue, out: queue.Queue, stop) -> None:
        try:
            batcher = StreamBatcher(self.batch_size, self._forward,
                                    self._fail)
            while True:
                entry = self._get(inq, stop)
                if entry is _END or isinstance(entry, _Failed):
                    done = batcher.flush()
                    if all(self._put(out, d, stop) for d in done):
                        self._put(out, entry, stop)
                    return
                for done in batcher.add(*entry):
                    if not self._put(out, done, stop):
                        return
        except BaseException as err:  # noqa: BLE001 - re-raised by caller
            self._put(out, _Failed(err), stop)

    def _finish(self, entry):
        """(frame, result or None, error or None); runs on the workers."""
        frame, context, outputs = entry
        try:
            return frame, self.stages.finish(frame, context, outputs), None
        except Exception as err:  # noqa: BLE001 - skipped and counted
            return frame, None, err

    def _entries(self, inq: queue.Queue, stop, end: list) -> Iterator:
        """The model's outputs until its end marker (kept in ``end``)."""
        while True:
            entry = self._get(inq, stop)
            if entry is _END or isinstance(entry, _Failed):
                end.append(entry)
                return
            yield entry

    def _post(self, inq: queue.Queue, out: queue.Queue, stop) -> None:
        try:
            end = []
            steps = ordered_map(self._finish, self._entries(inq, stop, end),
                                self.workers, self.prefetch)
            with closing(steps):
                for frame, result, err in steps:
                    if err is not None:
                        self._fail(frame, err)
                        continue
                    if not self._put(out, (frame, result), stop):
                        return
            self._put(out, end[0] if end else _END, stop)
        except BaseException as err:  # noqa: BLE001 - re-raised by caller
            self._put(out, _Failed(err), stop)

    # -- public -------------------------------------------------------------
    def iter_frames(self, inputs=None, reader: Optional[FrameReader] = None,
                    on_failure: Optional[Callable[[Frame, str], None]] = None
                    ) -> Iterator:
        """Yield ``(frame, result)`` in input order (as
        :meth:`BaseInferencer.iter_frames`, with the same failure rules)."""
        reader = reader if reader is not None else FrameReader(inputs)
        self.inferencer.reader = reader
        self.failed = self.inferencer.failed = []
        self._on_failure = on_failure
        stop = threading.Event()
        prepared = queue.Queue(self.prefetch)
        computed = queue.Queue(self.prefetch)
        results = queue.Queue(self.prefetch)
        threads = [
            threading.Thread(target=self._reader, args=(reader, prepared, stop),
                             name='sapiens2-read', daemon=True),
            threading.Thread(target=self._model,
                             args=(prepared, computed, stop),
                             name='sapiens2-model', daemon=True),
            threading.Thread(target=self._post, args=(computed, results, stop),
                             name='sapiens2-post', daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            while True:
                entry = results.get()
                if entry is _END:
                    break
                if isinstance(entry, _Failed):
                    raise entry.error
                yield entry
        finally:
            stop.set()
            for thread in threads:
                thread.join()

    def iter_results(self, inputs=None,
                     reader: Optional[FrameReader] = None) -> Iterator:
        """Yield one result per readable frame, in input order."""
        for _, result in self.iter_frames(inputs, reader):
            yield result

    def __call__(self, inputs) -> list:
        """All results as a list."""
        return list(self.iter_results(inputs))
