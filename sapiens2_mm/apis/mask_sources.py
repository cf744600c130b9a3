"""Foreground masks of the dense tasks: where they come from.

A dense inferencer attaches an optional foreground mask to each result. The
official dense demos take ``--seg_dir``: one mask per photo, used for the drawing
(background black / grey or the photo) and for which points go into the
pointmap ``.ply``; the saved arrays stay unmasked. Two sources here:

* :class:`SegDirMasks`: a folder with, per frame (``<stem>`` = the frame's
  name without extension, sub-folders kept), the first file found of
  ``<stem>.npy`` (boolean, or any array: non-zero = foreground),
  ``<stem>_seg.npy`` (class labels of the seg task, 0 = background), the
  photo's own file name or ``<stem>.png`` / ``<stem>_fg.png`` (an image,
  :func:`read_mask_image`). The photo itself is never taken as its mask
  (``--seg-dir`` = the input folder). A frame without a mask is counted and
  uses the whole frame; a mask of another size than its photo is an error for
  that frame; a mask covering 0 % or 100 % of its photo (usually a format
  read the wrong way) is warned about and listed.
* :class:`SegModelMasks`: our own seg model run on the same decoded frames
  (labels > 0 = foreground).

Both sources have the three steps of an inferencer, run inside the dense
inferencer's own (:class:`~sapiens2_mm.apis.DenseInferencer`):
``prepare(frame)`` on the CPU workers before the network, ``forward(frames,
contexts)`` on the network's thread with the dense batch, ``finish(frame,
context, forwarded)`` on the CPU workers after it. The seg model's
post-processing (logits resized to the photo, argmax) is thus CPU work of
``finish``, never on the network's thread.
"""
import os.path as osp
import threading
from typing import Dict, List, Optional, Sequence

import cv2
import numpy as np
from mmengine.logging import print_log

from ..utils.user_errors import InputNotAFolderError, OptionError
from .inputs import Frame
from .seg_inferencer import SegInferencer

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
    return read_mask_image(path)


def read_mask_image(path: str) -> np.ndarray:
    """(H, W) bool foreground of a mask image.

    * a palette image (VOC-style PNG): palette index > 0, whatever its color
      (index 1 is (128, 0, 0), which OpenCV would expand to a dark red);
    * one channel (grey, 8 or 16 bit): value > 0;
    * color: any of the three color channels > 0 (a red, green, white ...
      mask; the channel order does not matter), and where there is an alpha
      channel also alpha > 0 (a cut-out's transparent part is background).

    Raises:
        ValueError: not a readable image.
    """
    from PIL import Image
    try:
        with Image.open(path) as image:
            if image.mode in ('P', 'PA'):
                # the indices, not the colors OpenCV would expand them to
                return np.asarray(image.getchannel(0)) > 0
    except (OSError, ValueError):
        pass  # formats PIL cannot open: OpenCV below
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f'mask {path}: not a readable image.')
    if image.ndim == 2:
        return image > 0
    mask = (image[..., :3] > 0).any(-1)
    if image.shape[-1] == 4:
        mask &= image[..., 3] > 0
    return mask


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


def check_seg_dir(seg_dir: str) -> str:
    """``seg_dir`` if it is a folder, else a NotADirectoryError saying so."""
    if not osp.isdir(seg_dir):
        raise InputNotAFolderError(
            f'--seg-dir {seg_dir!r} is not a folder; give the folder of '
            'the masks (e.g. the output folder of tools/infer.py seg).')
    return seg_dir


def check_foreground_options(seg_dir: Optional[str], fg_seg) -> None:
    """At most one mask source, and ``seg_dir`` a folder (checked by the
    CLI before the model loads, and by :func:`foreground_source`).

    Raises:
        ValueError: both given. NotADirectoryError: see :func:`check_seg_dir`.
    """
    if seg_dir is not None and fg_seg is not None:
        raise OptionError('--seg-dir and --fg-seg (seg_dir / fg_seg) both '
                         'give the foreground; use one of them.')
    if seg_dir is not None:
        check_seg_dir(seg_dir)


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
        self.seg_dir = check_seg_dir(seg_dir)
        self.missing: Dict[str, None] = {}
        self.degenerate: Dict[str, str] = {}
        self._lock = threading.Lock()

    def find(self, frame: Frame) -> Optional[str]:
        """The mask file of ``frame``, or None (never the photo itself:
        ``--seg-dir`` may be the input folder with masks beside the
        photos)."""
        stems = [frame.stem, osp.splitext(frame.name)[0]]
        for pattern in MASK_PATTERNS:
            for stem in dict.fromkeys(stems):
                path = osp.join(self.seg_dir, pattern.format(
                    stem=stem, name=frame.name))
                if osp.isfile(path) and not (
                        frame.source and osp.isfile(frame.source)
                        and osp.samefile(path, frame.source)):
                    return path
        return None

    def prepare(self, frame: Frame) -> None:
        """Nothing before the network (the files are read in
        :meth:`forward`)."""
        return None

    def forward(self, frames: Sequence[Frame],
                contexts: Sequence[None]) -> List[Optional[np.ndarray]]:
        """One (H, W) bool mask per frame, ``None`` where there is none,
        read with the dense batch: a bad mask fails that batch, which is
        then re-run frame by frame (only that frame fails).

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
            mask = check_mask_size(read_mask_file(path), frame, path)
            if not mask.any() or mask.all():
                self._record_degenerate(frame.name, path, mask.any())
            out.append(mask)
        return out

    def finish(self, frame: Frame, context: None,
               mask: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """The frame's mask (read in :meth:`forward`)."""
        return mask

    def _record_degenerate(self, name: str, path: str, full: bool) -> None:
        with self._lock:
            if name in self.degenerate:
                return
            self.degenerate[name] = '100 %' if full else '0 %'
            count = len(self.degenerate)
        if count <= MAX_MISSING_LOGGED:
            print_log(f'The foreground mask {path} of {name} covers '
                      f'{self.degenerate[name]} of the photo; check its '
                      'format (docs/inference.md, "Foreground masks").',
                      logger='current', level=30)

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
        lines = [f'foreground masks: from {self.seg_dir}']
        if self.missing:
            names = list(self.missing)
            lines[0] += (f'; {len(names)} frame(s) had none and used the '
                         f'whole frame: {_first_names(names)}')
        if self.degenerate:
            lines.append(
                f'WARNING: {len(self.degenerate)} frame(s) had a mask '
                'covering 0 % or 100 % of the photo: ' + _first_names(
                    [f'{n} ({c})' for n, c in self.degenerate.items()])
                + '; check the mask format (docs/inference.md, "Foreground '
                'masks")')
        return lines


def _first_names(names: List[str], count: int = 5) -> str:
    """The first ``count`` of ``names``, joined, and how many more."""
    more = f' (+{len(names) - count} more)' if len(names) > count else ''
    return ', '.join(names[:count]) + more


class SegModelMasks:
    """Masks from our own seg model, on the frames the dense model gets.

    The seg inferencer's three steps run inside the dense inferencer's:
    its ``prepare`` (resize, pack) in the dense ``prepare``, its network
    in the dense ``forward`` on the same frames (in batches of its own
    ``batch_size``), its ``finish`` (logits resized to the photo, argmax) in
    the dense ``finish``.

    Args:
        inferencer: a :class:`~sapiens2_mm.apis.SegInferencer`.
    """
    source = 'fg_seg'

    def __init__(self, inferencer: SegInferencer) -> None:
        self.inferencer = inferencer

    def prepare(self, frame: Frame) -> tuple:
        """The seg inferencer's ``(context, items)`` of the frame."""
        return self.inferencer.prepare(frame)

    def forward(self, frames: Sequence[Frame],
                contexts: Sequence[tuple]) -> List[list]:
        """The seg network on the items of ``frames``: per frame, the
        outputs of its items."""
        items = [item for _, frame_items in contexts for item in frame_items]
        size = self.inferencer.batch_size
        outputs = []
        for start in range(0, len(items), size):
            outputs += self.inferencer.forward(items[start:start + size])
        per_frame, start = [], 0
        for _, frame_items in contexts:
            per_frame.append(outputs[start:start + len(frame_items)])
            start += len(frame_items)
        return per_frame

    def finish(self, frame: Frame, context: tuple,
               outputs: list) -> np.ndarray:
        """(H, W) bool mask: seg labels > 0 (0 is the background class)."""
        result = self.inferencer.finish(frame, context[0], outputs)
        return result.label_map > 0

    def report(self) -> List[str]:
        return ['foreground masks: from the seg model (--fg-seg), written as '
                '<stem>_fg.png']


def foreground_source(seg_dir: Optional[str] = None, fg_seg=None,
                      batch_size: int = 4):
    """The mask source of ``seg_dir`` / ``fg_seg`` (at most one), or None.

    Args:
        seg_dir: a folder of masks.
        fg_seg: a seg model (from :func:`~sapiens2_mm.apis.init_model`) or a
            ``SegInferencer``. (``build_inferencer`` and ``run_inference``
            also take a ``(config, checkpoint)`` pair: they load the seg
            model.)
        batch_size: the seg inferencer's, for a seg model.

    Raises:
        ValueError: both given, or ``fg_seg`` is not a seg model.
        NotADirectoryError: ``seg_dir`` is not a folder.
    """
    check_foreground_options(seg_dir, fg_seg)
    if seg_dir is not None:
        return SegDirMasks(seg_dir)
    if fg_seg is None:
        return None
    if isinstance(fg_seg, SegInferencer):
        return SegModelMasks(fg_seg)
    if isinstance(fg_seg, (tuple, list)):
        raise OptionError(
            'DenseInferencer takes fg_seg as a seg model or a SegInferencer; '
            'build_inferencer(model, fg_seg=(config, checkpoint)) and '
            'run_inference load the seg model of a pair.')
    if getattr(fg_seg, 'task', None) != 'seg':
        raise OptionError(
            'fg_seg must be a seg model, a SegInferencer or a (seg config, '
            f'checkpoint) pair; got a {getattr(fg_seg, "task", None)!r} '
            'model.')
    return SegModelMasks(SegInferencer(fg_seg, batch_size=batch_size))
