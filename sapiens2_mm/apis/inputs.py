"""Turn user inputs (paths, arrays, folders, videos) into a stream of frames.

Unreadable files never stop a run: each is recorded in :attr:`FrameReader.
skipped` (path and reason) and the stream goes on with the next one.
"""
import os
import os.path as osp
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np

IMAGE_EXTS = ('.jpg', '.jpeg', '.png', '.bmp', '.tif', '.tiff', '.webp')
VIDEO_EXTS = ('.mp4', '.avi', '.mov', '.mkv', '.webm', '.m4v')
InputType = Union[str, os.PathLike, np.ndarray]


@dataclass
class Frame:
    """One image to run the model on.

    Attributes:
        name: output file name: the image's base name, ``array_{i:06d}.png``
            for the i-th array, ``{video_stem}_{index:06d}.jpg`` for video frames.
        image: (H, W, 3) uint8 BGR.
        source: the file it came from ('' for arrays).
        video: the video path for video frames, else ``None``.
        frame_index: index of the frame in its video.
        fps: frames per second of its video.
    """
    name: str
    image: np.ndarray
    source: str = ''
    video: Optional[str] = None
    frame_index: Optional[int] = None
    fps: Optional[float] = None


def is_video(path: str) -> bool:
    """Whether ``path`` has a video file extension."""
    return path.lower().endswith(VIDEO_EXTS)


def _as_bgr(image: np.ndarray, what: str) -> np.ndarray:
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(
            f'{what}: expected an (H, W, 3) BGR image array, got shape '
            f'{image.shape}.')
    if image.dtype != np.uint8:
        raise ValueError(
            f'{what}: expected dtype uint8 (0-255 BGR), got {image.dtype}. '
            'Convert with np.clip(x, 0, 255).astype(np.uint8).')
    return np.ascontiguousarray(image[..., :3])


class FrameReader:
    """Iterate over the frames of several inputs, skipping unreadable files.

    Args:
        inputs: an image path, a folder (its images and videos, sorted, not
            recursive), a video path, an (H, W, 3) uint8 BGR array, or a list
            of those.

    Raises:
        FileNotFoundError: a given path does not exist.
        ValueError: an array is not an (H, W, 3) uint8 image.
    """

    def __init__(self, inputs: Union[InputType, Sequence[InputType]]) -> None:
        if isinstance(inputs, (str, os.PathLike, np.ndarray)):
            inputs = [inputs]
        self.items: List[Union[str, np.ndarray]] = []
        for item in inputs:
            if isinstance(item, np.ndarray):
                self.items.append(item)
                continue
            path = os.fspath(item)
            if osp.isdir(path):
                names = sorted(os.listdir(path))
                self.items += [
                    osp.join(path, n) for n in names
                    if n.lower().endswith(IMAGE_EXTS + VIDEO_EXTS)
                ]
            elif osp.isfile(path):
                self.items.append(path)
            else:
                raise FileNotFoundError(
                    f'Input {path!r} does not exist; pass an image, a video '
                    'or a folder of images.')
        for i, item in enumerate(self.items):
            if isinstance(item, np.ndarray):
                self.items[i] = _as_bgr(item, f'input array {i}')
        self.skipped: List[Tuple[str, str]] = []

    def num_frames(self) -> int:
        """Frames to expect (video frame counts as the container reports)."""
        total = 0
        for item in self.items:
            if isinstance(item, str) and is_video(item):
                cap = cv2.VideoCapture(item)
                total += max(int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), 0)
                cap.release()
            else:
                total += 1
        return total

    def _read_video(self, path: str) -> Iterator[Frame]:
        cap = cv2.VideoCapture(path)
        if not cap.isOpened():
            self.skipped.append((path, 'cannot open the video'))
            return
        fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
        stem = osp.splitext(osp.basename(path))[0]
        index = 0
        try:
            while True:
                ok, image = cap.read()
                if not ok:
                    break
                yield Frame(f'{stem}_{index:06d}.jpg', image, path, path,
                            index, fps)
                index += 1
        finally:
            cap.release()
        if index == 0:
            self.skipped.append((path, 'the video has no decodable frames'))

    def __iter__(self) -> Iterator[Frame]:
        self.skipped = []
        num_arrays = 0
        for item in self.items:
            if isinstance(item, np.ndarray):
                yield Frame(f'array_{num_arrays:06d}.png', item)
                num_arrays += 1
            elif is_video(item):
                yield from self._read_video(item)
            else:
                image = cv2.imread(item, cv2.IMREAD_COLOR)
                if image is None or image.size == 0:
                    self.skipped.append(
                        (item, 'not a decodable image (empty, truncated or '
                         'another format)'))
                    continue
                yield Frame(osp.basename(item), image, item)


def batched(frames: Iterable[Frame], size: int) -> Iterator[List[Frame]]:
    """Group a frame stream into lists of ``size`` (the last may be shorter)."""
    if size < 1:
        raise ValueError(f'batch_size must be >= 1, got {size}.')
    batch: List[Frame] = []
    for frame in frames:
        batch.append(frame)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
