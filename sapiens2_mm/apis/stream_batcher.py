"""Cut the model items of a stream of frames into full batches.

The network of :class:`~sapiens2_mm.apis.pipelined_runner.PipelinedRunner`
runs one batch size whatever the number of items (pose: people) per frame:
items wait across frame boundaries and frames are handed on, in order, once
all their outputs exist.
"""
from collections import deque
from typing import Callable, Deque, List, Tuple

from .inputs import Frame


class PendingFrame:
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
        self.frames: Deque[PendingFrame] = deque()
        self.queued: List[Tuple[PendingFrame, int, object]] = []

    def add(self, frame: Frame, context, items: list) -> list:
        """Queue one frame's items; run every full batch."""
        pending = PendingFrame(frame, context, items)
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
            outputs = self.forward([item for _, _, item in batch])
        except Exception:  # noqa: BLE001 - isolated below, frame by frame
            self._run_frame_by_frame(batch)
            return
        self._store(batch, outputs)

    def _run_frame_by_frame(self, batch: list) -> None:
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
