"""Drawings of finished frames, and their image encoding, on worker threads.

After the network, the slowest step of a run on large photos is the drawing
(a seg overlay blends every pixel) and encoding it (a 12 MP photo's
side-by-side JPEG is 24 MP). Both are numpy / OpenCV work that releases the
GIL, so they run on threads; the files are still written one frame at a
time, in input order, by the caller (a video's frames must be appended in
order, and the output index lists finished frames).
"""
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple

import numpy as np

from .inputs import Frame
from .ordered_pool import ordered_map
from .writers import encode_image


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


def render_frames(frames: Iterable[Tuple[Frame, Any]],
                  draw: Optional[Callable[[Frame, Any], Optional[np.ndarray]]],
                  workers: int) -> Iterator[Rendered]:
    """``draw(frame, result)`` for every finished frame, on ``workers``
    threads, in input order.

    Args:
        frames: ``(frame, result)`` pairs (a runner's ``iter_frames``).
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
