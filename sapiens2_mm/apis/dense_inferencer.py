"""Dense predictions (normals, pointmap + scale, albedo, ...) at the original size.

The same steps, in the same order, as the official dense demos: letterbox
the frame to the network size (the config's test pipeline,
``DenseResizePad``), forward, then the task's post-processing (normals made
unit length, metric pointmap = canonical / scale, albedo clamped to [0, 1]),
remove the letterbox padding and resize back to the frame size (the
pointmap blurred first when the frame is larger), and the focal length
768 / (scale * r). The post-processing is the model head's own
(:meth:`DenseEstimator.postprocess_result`), so ``tools/test.py`` and the
inferencer produce the same maps; ``postprocess`` picks the head's other
orders (docs/dense.md).

Optional foreground masks are attached to each result. The official dense
demos take ``--seg_dir``: one mask per photo, used for the drawing
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
"""
import os.path as osp
import threading
from typing import Dict, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np
import torch
from mmengine.dataset import pseudo_collate
from mmengine.logging import print_log

from ..structures import dense_outputs
from .base_inferencer import BaseInferencer
from .inputs import Frame
from .results import DenseResult

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
        raise NotADirectoryError(
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
        raise ValueError('--seg-dir and --fg-seg (seg_dir / fg_seg) both '
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
            mask = check_mask_size(read_mask_file(path), frame, path)
            if not mask.any() or mask.all():
                self._record_degenerate(frame.name, path, mask.any())
            out.append(mask)
        return out

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

    Args:
        inferencer: a :class:`~sapiens2_mm.apis.SegInferencer`.
    """
    source = 'fg_seg'

    def __init__(self, inferencer) -> None:
        self.inferencer = inferencer

    def masks(self, frames: Sequence[Frame]) -> List[np.ndarray]:
        """(H, W) bool masks: seg labels > 0 (0 is the background class)."""
        return [r.label_map > 0 for r in self.inferencer.predict(frames)]

    def report(self) -> List[str]:
        return ['foreground masks: from the seg model (--fg-seg), written as '
                '<stem>_fg.png']


def foreground_source(seg_dir: Optional[str] = None, fg_seg=None,
                      device: str = 'cpu', batch_size: int = 4):
    """The mask source of ``seg_dir`` / ``fg_seg`` (at most one), or None.

    ``fg_seg``: a seg model (from :func:`init_model`), a ``SegInferencer``,
    or a ``(config, checkpoint)`` pair.
    """
    check_foreground_options(seg_dir, fg_seg)
    if seg_dir is not None:
        return SegDirMasks(seg_dir)
    if fg_seg is None:
        return None
    from .seg_inferencer import SegInferencer
    if isinstance(fg_seg, SegInferencer):
        return SegModelMasks(fg_seg)
    if isinstance(fg_seg, (tuple, list)):
        from .init_model import init_model
        config, checkpoint = fg_seg
        fg_seg = init_model(config, checkpoint, device)
    if getattr(fg_seg, 'task', None) != 'seg':
        raise ValueError(
            'fg_seg must be a seg model, a SegInferencer or a (seg config, '
            f'checkpoint) pair; got a {getattr(fg_seg, "task", None)!r} '
            'model.')
    return SegModelMasks(SegInferencer(fg_seg, batch_size=batch_size))


def check_letterbox_size(frame: Frame, input_size: Optional[Sequence[int]],
                         minimum: int = 2) -> None:
    """Refuse a photo too thin to letterbox: scaled by ``r = min(H / h,
    W / w)`` into the (H, W) network input it would be ``int(h r) x int(w
    r)`` pixels, and the post-processing (blur, resize back) needs at least
    ``minimum`` in each direction (a 1x500 photo is 0 or 1 pixel high).

    Raises:
        ValueError: naming the photo's and the letterboxed size.
    """
    if not input_size:
        return
    h, w = frame.image.shape[:2]
    net_h, net_w = input_size
    r = min(net_h / h, net_w / w)
    inner_h, inner_w = int(h * r), int(w * r)
    if min(inner_h, inner_w) < minimum:
        raise ValueError(
            f'the photo is {h}x{w} pixels; letterboxed into the {net_h}x'
            f'{net_w} network input it is {inner_h}x{inner_w}, thinner than '
            f'{minimum} pixels: an aspect ratio this extreme cannot be '
            'processed (crop the photo).')


def _hwc(sample, name: str) -> Optional[np.ndarray]:
    """``sample.<name>`` (C, H, W) as a float32 (H, W, C) array, or None."""
    if name not in sample:
        return None
    data = getattr(sample, name).data.detach().float().cpu().numpy()
    return np.ascontiguousarray(data.transpose(1, 2, 0))


class DenseInferencer(BaseInferencer):
    """Run a :class:`~sapiens2_mm.models.estimators.DenseEstimator`.

    Each dense task runs it under its own name (``task``; the registered
    task descriptions of :mod:`sapiens2_mm.apis.tasks` make the subclass);
    the result holds the maps the task declares
    (:mod:`sapiens2_mm.structures.dense_outputs`).

    With ``flip_test`` the mirrored frame is run too and the two raw outputs
    are merged by the head (mirror undone, x negated for normals and
    pointmaps, scales averaged), as ``test_cfg.flip_test`` does in
    ``tools/test.py``; ``None`` keeps the config's ``test_cfg.flip_test``.

    A frame whose post-processing fails (e.g. a pointmap scale <= 0 with the
    head's ``scale_guard='error'``), or whose mask is of another size, is
    skipped and listed in :attr:`failed` by :meth:`iter_frames`; the others
    go on.

    Args:
        postprocess: the head's post-processing options, e.g.
            ``{'normalize': 'after_resize'}`` (normal),
            ``{'resize_smoothing': 'none'}`` (pointmap),
            ``{'clamp': 'after_resize'}`` (albedo); default the official
            demos' order (see the heads).
        seg_dir: a folder of foreground masks (formats:
            the module docstring); a frame without one uses
            the whole frame and is listed in the end-of-run report.
        fg_seg: instead, take the foreground from a seg model run on the
            same frames: a seg model, a ``SegInferencer`` or a ``(config,
            checkpoint)`` pair.
        Others: see :class:`BaseInferencer`.
    """

    def __init__(self, model, *args, postprocess: Optional[dict] = None,
                 seg_dir: Optional[str] = None,
                 fg_seg: Union[None, object, Tuple[str, str]] = None,
                 **kwargs) -> None:
        super().__init__(model, *args, **kwargs)
        if self.flip_test is None:
            self.flip_test = bool(
                (self.model.test_cfg or {}).get('flip_test', False))
        if postprocess:
            self.model.decode_head.set_postprocess(**postprocess)
        self.foreground = foreground_source(
            seg_dir, fg_seg, str(next(self.model.parameters()).device),
            self.batch_size)

    def prepare(self, frame: Frame) -> Tuple[None, list]:
        check_letterbox_size(frame, self.model.dataset_meta.get('input_size'))
        return None, [(frame, self.pack(frame))]

    def forward(self, items: list) -> list:
        """Per item: (the head's outputs of that item, its data sample, its
        foreground mask). The masks of a seg model (``fg_seg``) are computed
        here, on the same batch of frames; a bad mask fails before the
        forward."""
        masks = [None] * len(items) if self.foreground is None else \
            self.foreground.masks([frame for frame, _ in items])
        model = self.model
        data = model.data_preprocessor(
            pseudo_collate([packed for _, packed in items]), False)
        inputs, samples = data['inputs'], data['data_samples']
        head = model.decode_head
        outputs = head.forward(model.extract_feat(inputs))
        if self.flip_test:
            flipped = head.forward(model.extract_feat(inputs.flip(-1)))
            outputs = head.merge_flipped(outputs, flipped)
        return [(_item_of(outputs, i), sample, mask)
                for i, (sample, mask) in enumerate(zip(samples, masks))]

    def finish(self, frame: Frame, context, outputs: list) -> DenseResult:
        """The head's post-processing (at the frame size) as a result."""
        head_outputs, sample, mask = outputs[0]
        sample = self.model.postprocess_result(head_outputs, [sample])[0]
        maps = {}
        for field in dense_outputs(self.task).fields:
            value = _hwc(sample, field.pred)
            if value is not None:
                maps[field.name] = field.as_map(value)
        scale = sample.metainfo.get('pred_scale')
        focal = sample.metainfo.get('pred_focal_length')
        source = getattr(self.foreground, 'source', None)
        return DenseResult(
            name=frame.name,
            image_size=tuple(frame.image.shape[:2]),
            maps=maps,
            scale=None if scale is None else float(scale),
            focal_length=None if focal is None else float(focal),
            video=frame.video,
            frame_index=frame.frame_index,
            foreground=mask,
            foreground_source=source if mask is not None else (
                None if source is None else 'missing'))


def _item_of(outputs, index: int):
    """Sample ``index`` of a head's batched outputs (a tensor or a tuple of
    tensors), batch dimension kept."""
    if isinstance(outputs, torch.Tensor):
        return outputs[index:index + 1]
    return type(outputs)(_item_of(o, index) for o in outputs)
