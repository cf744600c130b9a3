"""Turn user inputs (paths, arrays, folders, videos) into a stream of frames.

Unreadable files never stop a run: each is recorded in :attr:`FrameReader.
skipped` (path and reason) and the stream goes on with the next one. Readable
but damaged files (a truncated JPEG decodes to a half-grey image) are read and
recorded in :attr:`FrameReader.warnings`.

Every frame has a ``name`` that identifies it in outputs, bbox files and the
predictions JSON: its path relative to the deepest folder that holds all
inputs, with ``/`` separators. One folder ``photos/`` gives ``a.jpg``;
``cam1/ cam2/`` give ``cam1/0001.jpg`` and ``cam2/0001.jpg``. Video frames are
``<folder>/<video stem>_<index:06d>.jpg``, arrays ``array_<i:06d>.png``
(numbered on after the arrays an earlier run into the same output folder
finished: :meth:`FrameReader.number_arrays_after`).

Names and stems (the base of each frame's output files) are unique among
all frames of a run: a photo ``clip_000000.jpg`` next to ``clip.mp4`` keeps
its name and the video's frames become ``clip_mp4_000000.jpg`` ...; stems
that still collide after the ``_<ext>`` rule get ``_2``, ``_3`` ...
"""
import os
import os.path as osp
import re
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import (
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

import cv2
import numpy as np

from ..utils.user_errors import InputError, InputNotFoundError

#: The name of an input array (``array_<i:06d>.png``), group 1 its number.
ARRAY_NAME = re.compile(r'array_(\d{6,})\.png')
IMAGE_EXTS = ('.jpg', '.jpeg', '.png', '.bmp', '.tif', '.tiff', '.webp')
VIDEO_EXTS = ('.mp4', '.avi', '.mov', '.mkv', '.webm', '.m4v')
InputType = Union[str, os.PathLike, np.ndarray]


@dataclass
class Frame:
    """One image to run the model on.

    Attributes:
        name: the frame's key (module docstring), e.g. ``cam1/0001.jpg``.
        image: (H, W, 3) uint8 BGR.
        source: the file it came from ('' for arrays).
        video: the video path for video frames, else ``None``.
        frame_index: index of the frame in its video.
        fps: frames per second of its video.
        stem: ``name`` without extension, made unique among the inputs
            (``a.jpg`` and ``a.png`` give ``a_jpg`` and ``a_png``): the base
            of per-frame data files such as ``<stem>_seg.npy``.
        video_name: the key of its video (``cam1/clip.mp4``), for videos.
        video_stem: the unique stem of its video (``cam1/clip``).
        warning: why the decoded image may be damaged (truncated file).
    """
    name: str
    image: np.ndarray
    source: str = ''
    video: Optional[str] = None
    frame_index: Optional[int] = None
    fps: Optional[float] = None
    stem: str = ''
    video_name: Optional[str] = None
    video_stem: Optional[str] = None
    warning: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.stem:
            self.stem = osp.splitext(self.name)[0]


@dataclass
class Loaded:
    """What one input step gave: a frame, and/or a skip or warning record.

    Attributes:
        frame: the decoded frame, ``None`` when the input was skipped.
        skipped: (path, reason) when the input could not be read.
        warning: (path, reason) when it was read but may be damaged.
    """
    frame: Optional[Frame] = None
    skipped: Optional[Tuple[str, str]] = None
    warning: Optional[Tuple[str, str]] = None


#: One step of :meth:`FrameReader.jobs`: call it (on any thread) to load.
FrameJob = Callable[[], Loaded]


def _ready(loaded: Loaded) -> FrameJob:
    """A job whose work is already done (arrays, decoded video frames)."""
    return lambda: loaded


def file_identity(path: Optional[str]) -> Optional[list]:
    """[size, modification time in ns] of a file, ``None`` if absent: what
    the run index records to tell a file from another of the same name."""
    if not path or not osp.isfile(path):
        return None
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns]


def is_video(path: str) -> bool:
    """Whether ``path`` has a video file extension."""
    return path.lower().endswith(VIDEO_EXTS)


def _as_bgr(image: np.ndarray, what: str) -> np.ndarray:
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise InputError(
            f'{what}: expected an (H, W, 3) BGR image array, got shape '
            f'{image.shape}.')
    if image.dtype != np.uint8:
        raise InputError(
            f'{what}: expected dtype uint8 (0-255 BGR), got {image.dtype}. '
            'Convert with np.clip(x, 0, 255).astype(np.uint8).')
    if image.size == 0:
        raise InputError(f'{what}: shape {image.shape} has no pixels; pass '
                         'an image of at least 1x1.')
    return np.ascontiguousarray(image[..., :3])


def jpeg_is_truncated(data: bytes) -> bool:
    """Whether JPEG bytes lack the end-of-image marker after the last scan.

    libjpeg decodes a truncated file without an error and fills the missing
    rows with grey; the only sign is the missing ``FF D9`` marker.
    """
    if data[:2] != b'\xff\xd8':
        return False
    return data.rfind(b'\xff\xd9') < max(data.rfind(b'\xff\xda'), 2)


def read_image(path: str) -> Tuple[Optional[np.ndarray], Optional[str]]:
    """Decode an image file (``cv2.imread``, EXIF orientation applied).

    Returns:
        ``(image, warning)``: ``image`` is (H, W, 3) uint8 BGR or ``None``
        when the file cannot be decoded; ``warning`` says why a decoded image
        may be damaged.
    """
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    if image is None or image.size == 0:
        return None, None
    warning = None
    if path.lower().endswith(('.jpg', '.jpeg')):
        with open(path, 'rb') as f:
            data = f.read()
        if jpeg_is_truncated(data):
            warning = ('truncated JPEG (no end-of-image marker): the missing '
                       'part decodes as grey')
    return image, warning


def _unique_stems(names: Sequence[str]) -> List[str]:
    """``name`` without extension, or with ``_<ext>`` where stems collide;
    a stem still taken after that (``a.jpg``, ``a.png`` and ``a_jpg.png``)
    gets ``_2``, ``_3`` ... in input order."""
    stems = [osp.splitext(n)[0] for n in names]
    counts = Counter(stems)
    stems = [
        s if counts[s] == 1 else f'{s}_{osp.splitext(n)[1].lstrip(".")}'
        for s, n in zip(stems, names)
    ]
    counts = Counter(stems)
    taken, unique = set(), []
    for stem in stems:
        new, k = stem, 1
        while new in taken or (k > 1 and counts[new]):
            k += 1
            new = f'{stem}_{k}'
        taken.add(new)
        unique.append(new)
    return unique


def _frame_bases(names: Sequence[str], stems: Sequence[str],
                 videos: Sequence[bool]) -> List[str]:
    """Per input, the base of its video frames' names
    (``<base>_<index:06d>.jpg``): the video's stem unless a photo's name or
    stem could be such a frame name, then ``<stem>_<ext>`` (``_2`` ...
    appended while still ambiguous). ``''`` for photos and arrays."""
    photo_roots = set()
    for name, stem, video in zip(names, stems, videos):
        if not video:
            photo_roots.update((stem, osp.splitext(name)[0]))

    def clashes(base: str) -> bool:
        frame = re.compile(re.escape(base) + r'_\d{6,}')
        return any(frame.fullmatch(root) for root in photo_roots)

    bases = []
    for name, stem, video in zip(names, stems, videos):
        base = stem
        if video and clashes(base):
            base = with_ext = f'{stem}_{osp.splitext(name)[1][1:].lower()}'
            k = 1
            while clashes(base):
                k += 1
                base = f'{with_ext}_{k}'
        bases.append(base if video else '')
    return bases


class FrameReader:
    """Iterate over the frames of several inputs, skipping unreadable files.

    Args:
        inputs: an image path, a folder (its images and videos, sorted, not
            recursive), a video path, an (H, W, 3) uint8 BGR array, or a list
            of those. A file given twice is read once.

    Attributes:
        num_done: inputs left out by the last :meth:`jobs` because an
            earlier run finished them (:meth:`leave_out`).

    Raises:
        FileNotFoundError: a given path does not exist, or nothing readable
            was found (the extensions read are listed).
        ValueError: an array is not an (H, W, 3) uint8 image.
    """

    def __init__(self, inputs: Union[InputType, Sequence[InputType]]) -> None:
        if isinstance(inputs, (str, os.PathLike, np.ndarray)):
            inputs = [inputs]
        self.items: List[Union[str, np.ndarray]] = []
        self.folders: List[str] = []
        self.warnings: List[Tuple[str, str]] = []
        empty: List[str] = []
        seen = set()
        bases = []
        for item in inputs:
            if isinstance(item, np.ndarray):
                self.items.append(item)
                continue
            path = osp.abspath(os.fspath(item))
            if osp.isdir(path):
                self.folders.append(path)
                bases.append(path)
                files = [osp.join(path, n) for n in sorted(os.listdir(path))
                         if n.lower().endswith(IMAGE_EXTS + VIDEO_EXTS)
                         and osp.isfile(osp.join(path, n))]
                if not files:
                    empty.append(os.fspath(item))
            elif osp.isfile(path):
                bases.append(osp.dirname(path))
                files = [path]
            else:
                raise InputNotFoundError(
                    f'Input {os.fspath(item)!r} does not exist; pass an '
                    'image, a video or a folder of images.')
            for f in files:
                real = osp.realpath(f)
                if real not in seen:
                    seen.add(real)
                    self.items.append(f)
        # folders without images are reported with every run's skipped list
        self.empty_folders = [(f, f'no images or videos in the folder. '
                               f'{_extensions_message()}') for f in empty]
        self.skipped: List[Tuple[str, str]] = list(self.empty_folders)
        if not self.items:
            where = ', '.join(repr(f) for f in empty) or 'the inputs'
            raise InputNotFoundError(
                f'No images or videos found in {where}. '
                f'{_extensions_message()}')
        for i, item in enumerate(self.items):
            if isinstance(item, np.ndarray):
                self.items[i] = _as_bgr(item, f'input array {i}')
        self.base_dir = osp.commonpath(bases) if bases else ''
        self.first_array = 0
        self._assign_names()
        self._done: Set[str] = set()
        self._done_videos: Set[str] = set()
        self.num_done = 0

    def leave_out(self, photos: Iterable[str] = (),
                  videos: Iterable[str] = ()) -> None:
        """Leave out the photos (frame names) and videos (video keys) an
        earlier run into the same output folder finished (the run index
        decides which: :func:`~sapiens2_mm.apis.inference_index.
        resume_run`); they are counted in :attr:`num_done`."""
        self._done = set(photos)
        self._done_videos = set(videos)

    def number_arrays_after(self, taken: Iterable[str]) -> None:
        """Number this run's arrays after the highest ``array_<i>.png`` of
        ``taken`` (the names an earlier run into the same output folder
        finished), so arrays of two calls never share a name or an output:
        an array has no file to recognise it by, so it is never "already
        done"."""
        numbers = [int(m.group(1)) for m in map(ARRAY_NAME.fullmatch, taken)
                   if m]
        self.first_array = max(numbers) + 1 if numbers else 0
        self._assign_names()

    def _assign_names(self) -> None:
        names, num_arrays = [], self.first_array
        for item in self.items:
            if isinstance(item, np.ndarray):
                names.append(f'array_{num_arrays:06d}.png')
                num_arrays += 1
            else:
                names.append(
                    osp.relpath(item, self.base_dir).replace(os.sep, '/'))
        self.names = names
        self.stems = _unique_stems(names)
        self.frame_bases = _frame_bases(
            names, self.stems,
            [isinstance(i, str) and is_video(i) for i in self.items])

    def sources(self) -> Tuple[Dict[str, str], Dict[str, Tuple[str, str]]]:
        """``(photo name -> file, video name -> (file, frame-name base))``
        for :meth:`InferenceIndex.check_sources`."""
        photos, videos = {}, {}
        for item, name, base in zip(self.items, self.names, self.frame_bases):
            if isinstance(item, str):
                if is_video(item):
                    videos[name] = (item, base)
                else:
                    photos[name] = item
        return photos, videos

    def input_paths(self) -> List[str]:
        """Absolute paths of the input files (not arrays)."""
        return [i for i in self.items if isinstance(i, str)]

    def num_frames(self) -> int:
        """Frames to expect (video frame counts as the container reports)."""
        total = 0
        for item, name in zip(self.items, self.names):
            if isinstance(item, str) and is_video(item):
                if name in self._done_videos:
                    continue
                cap = cv2.VideoCapture(item)
                total += max(int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), 0)
                cap.release()
            elif name not in self._done:
                total += 1
        return total

    def _video_jobs(self, path: str, name: str, stem: str,
                    base: str) -> Iterator[FrameJob]:
        """Frames decoded here, in order (a video decodes sequentially);
        ``base``: the start of the frame names (:func:`_frame_bases`)."""
        cap = cv2.VideoCapture(path)
        if not cap.isOpened():
            yield _ready(Loaded(skipped=(path, 'cannot open the video')))
            return
        fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
        listed = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        index = 0
        try:
            while True:
                ok, image = cap.read()
                if not ok:
                    break
                frame_name = f'{base}_{index:06d}.jpg'
                yield _ready(Loaded(Frame(
                    frame_name, image, path, path, index, fps,
                    video_name=name, video_stem=stem)))
                index += 1
        finally:
            cap.release()
        if index == 0:
            yield _ready(Loaded(skipped=(
                path, 'the video has no decodable frames')))
        elif index < listed:
            # damaged or cut short: the frames after it are lost
            yield _ready(Loaded(warning=(
                path, f'decoded {index} of the {listed} frames its header '
                'lists (the file may be truncated or damaged)')))

    @staticmethod
    def _load_photo(path: str, name: str, stem: str) -> Loaded:
        image, warning = read_image(path)
        if image is None:
            return Loaded(skipped=(
                path, 'not a decodable image (empty, truncated or another '
                'format)'))
        return Loaded(Frame(name, image, path, stem=stem, warning=warning),
                      warning=(path, warning) if warning else None)

    def jobs(self) -> Iterator[FrameJob]:
        """One job per frame or unreadable input, in input order.

        A photo job decodes its file when called, so several can run on
        threads (:func:`~sapiens2_mm.apis.frame_pipeline.ordered_map`); video
        frames are decoded while iterating. Pass each job's
        :class:`Loaded`, in order, to :meth:`record`.
        """
        self.skipped = list(self.empty_folders)
        self.warnings = []
        self.num_done = 0
        for item, name, stem, base in zip(self.items, self.names,
                                          self.stems, self.frame_bases):
            if isinstance(item, np.ndarray):
                yield _ready(Loaded(Frame(name, item, stem=stem)))
            elif is_video(item):
                if name in self._done_videos:
                    self.num_done += 1
                    continue
                yield from self._video_jobs(item, name, stem, base)
            elif name in self._done:
                self.num_done += 1
            else:
                yield partial(self._load_photo, item, name, stem)

    def record(self, loaded: Loaded) -> Optional[Frame]:
        """Note ``loaded``'s skip / warning; return its frame (or None)."""
        if loaded.skipped:
            self.skipped.append(loaded.skipped)
        if loaded.warning:
            self.warnings.append(loaded.warning)
        return loaded.frame

    def __iter__(self) -> Iterator[Frame]:
        for job in self.jobs():
            frame = self.record(job())
            if frame is not None:
                yield frame


def _extensions_message() -> str:
    return (f'Images are read with the extensions {", ".join(IMAGE_EXTS)} '
            f'and videos with {", ".join(VIDEO_EXTS)} (any case); folders '
            'are not searched recursively.')
