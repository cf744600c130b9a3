"""Foreground masks for the dense tasks (normal, pointmap, albedo).

The official dense demos take ``--seg_dir``: one mask per photo, used for the
drawing (background black / grey or the photo) and for which points go into
the pointmap ``.ply``; the saved arrays stay unmasked. Two sources here:

* :class:`SegDirMasks`: a folder with, per frame (``<stem>`` = the frame's
  name without extension, sub-folders kept), the first file found of
  ``<stem>.npy`` (boolean, or any array: non-zero = foreground),
  ``<stem>_seg.npy`` (class labels of the seg task, 0 = background), the
  photo's own file name or ``<stem>.png`` / ``<stem>_fg.png`` (an image:
  first channel > 0). A frame without a mask is counted and uses the whole
  frame; a mask of another size than its photo is an error for that frame.
* :class:`SegModelMasks`: our own seg model run on the same decoded frames
  (labels > 0 = foreground).
"""
import os.path as osp
import threading
from typing import Dict, List, Optional, Sequence

import cv2
import numpy as np
from mmengine.logging import print_log

from .inputs import Frame

#: File name endings looked up in a --seg-dir folder, in this order, after
#: the frame's stem ('{name}' = the photo's own file name).
MASK_PATTERNS = ('{stem}.npy', '{stem}_seg.npy', '{name}', '{stem}.png',
                 '{stem}_fg.png')
# At most this many missing masks are logged one by one.
MAX_MISSING_LOGGED = 10


def read_mask_file(path: str) -> np.ndarray:
    """(H, W) bool foreground of one mask file (formats: module docstring).

    Raises:
        ValueError: unreadable, or not a 2-D map (or image).
    """
    if path.endswith('.npy'):
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f'mask {path}: cannot be read as .npy ({err}).'
                             ) from err
        if data.ndim == 3 and data.shape[-1] == 1:
            data = data[..., 0]
        if data.ndim != 2:
            raise ValueError(f'mask {path}: expected an (H, W) array, got '
                             f'shape {data.shape}.')
        return data > 0 if data.dtype != bool else data
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f'mask {path}: not a readable image.')
    return (image[..., 0] if image.ndim == 3 else image) > 0


def check_mask_size(mask: np.ndarray, frame: Frame, where: str) -> np.ndarray:
    """``mask`` if it is the frame's (H, W), else a ValueError naming both."""
    size = tuple(frame.image.shape[:2])
    if tuple(mask.shape) != size:
        raise ValueError(
            f'foreground mask {where} is {mask.shape[0]}x{mask.shape[1]} but '
            f'the photo {frame.name} is {size[0]}x{size[1]}; give a mask of '
            'the photo\'s size (e.g. the seg task\'s <stem>_seg.npy of the '
            'same photo).')
    return mask


class SegDirMasks:
    """Masks from a folder (``--seg-dir``); see the module docstring.

    Args:
        seg_dir: the folder.

    Attributes:
        missing: names of the frames that had no mask (whole frame used).

    Raises:
        NotADirectoryError: ``seg_dir`` is not a folder.
    """
    source = 'seg_dir'

    def __init__(self, seg_dir: str) -> None:
        if not osp.isdir(seg_dir):
            raise NotADirectoryError(
                f'--seg-dir {seg_dir!r} is not a folder; give the folder of '
                'the masks (e.g. the output folder of tools/infer.py seg).')
        self.seg_dir = seg_dir
        self.missing: Dict[str, None] = {}
        self._lock = threading.Lock()

    def find(self, frame: Frame) -> Optional[str]:
        """The mask file of ``frame``, or None."""
        stems = [frame.stem, osp.splitext(frame.name)[0]]
        for pattern in MASK_PATTERNS:
            for stem in dict.fromkeys(stems):
                path = osp.join(self.seg_dir, pattern.format(
                    stem=stem, name=frame.name))
                if osp.isfile(path):
                    return path
        return None

    def masks(self, frames: Sequence[Frame]) -> List[Optional[np.ndarray]]:
        """One (H, W) bool mask per frame, ``None`` where there is none.

        Raises:
            ValueError: a mask file is unreadable or of another size.
        """
        out = []
        for frame in frames:
            path = self.find(frame)
            if path is None:
                self._record_missing(frame.name)
                out.append(None)
                continue
            out.append(check_mask_size(read_mask_file(path), frame, path))
        return out

    def _record_missing(self, name: str) -> None:
        with self._lock:
            if name in self.missing:
                return
            self.missing[name] = None
            count = len(self.missing)
        if count <= MAX_MISSING_LOGGED:
            print_log(f'No foreground mask for {name} in {self.seg_dir} '
                      f'(looked for {", ".join(MASK_PATTERNS)}); the whole '
                      'frame is used.', logger='current', level=30)

    def report(self) -> List[str]:
        """Summary lines for the end of a run."""
        if not self.missing:
            return [f'foreground masks: from {self.seg_dir}']
        names = list(self.missing)
        more = f' (+{len(names) - 5} more)' if len(names) > 5 else ''
        return [f'foreground masks: from {self.seg_dir}; {len(names)} '
                'frame(s) had none and used the whole frame: '
                f'{", ".join(names[:5])}{more}']


class SegModelMasks:
    """Masks from our own seg model, on the frames the dense model gets.

    Args:
        inferencer: a :class:`~sapiens2_mm.apis.SegInferencer`.
    """
    source = 'fg_seg'

    def __init__(self, inferencer) -> None:
        if getattr(inferencer, 'task', None) != 'seg':
            raise ValueError(
                'The foreground model must be a seg model (a seg config and '
                f'checkpoint), got a {getattr(inferencer, "task", None)!r} '
                'one.')
        self.inferencer = inferencer
        self.missing: Dict[str, None] = {}

    def masks(self, frames: Sequence[Frame]) -> List[np.ndarray]:
        """(H, W) bool masks: seg labels > 0 (0 is the background class)."""
        return [r.label_map > 0 for r in self.inferencer.predict(frames)]

    def report(self) -> List[str]:
        return ['foreground masks: from the seg model (--fg-seg), written as '
                '<stem>_fg.png']
