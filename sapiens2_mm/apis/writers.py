"""Where inference outputs go, and writing them without losing anything.

* :class:`OutputLayout` maps a frame to its output paths: the frame name
  (``cam1/0001.jpg``, see :mod:`sapiens2_mm.apis.inputs`) mirrored under the
  output folder, so frames of different folders never share a file. It refuses
  an output folder equal to or inside an input folder, and never writes onto
  an input file, onto a file another frame of the run wrote, or onto a file
  the run index lists for another input (an earlier run's output:
  :meth:`OutputLayout.keep_listed`).
* Every file is written to a temporary name and renamed when complete, so an
  interrupted run leaves no half-written image or array under a final name.
  The temporary name (:func:`~sapiens2_mm.utils.atomic_file.temporary_path`:
  hidden, random, created exclusively) is never an input's or another
  output's name: ``a.partial.png`` is a possible photo.
* :class:`TaskWriter` is what a task registers to write its per-frame files
  and its summary files (:meth:`BaseTask.open_writer`).
"""
import os
import os.path as osp
from typing import Dict, List, Optional

import cv2
import numpy as np

from ..utils.atomic_file import atomic_open, finish_file, temporary_path
from ..utils.output_paths import check_writable_dir, is_within
from ..utils.user_errors import OutputExistsError, OutputPathError
from .inputs import Frame, FrameReader


def check_output_outside_inputs(out_dir: str, reader: FrameReader) -> None:
    """Refuse an output folder that is an input folder or inside one.

    Visualizations keep the input file names, so writing them into an input
    folder would replace the photos.

    Raises:
        ValueError: naming both folders.
    """
    out = osp.realpath(out_dir)
    folders = [(osp.realpath(f), True) for f in reader.folders]
    folders += [(osp.dirname(osp.realpath(p)), False)
                for p in reader.input_paths()]
    for folder, is_input_folder in folders:
        if out == folder or (is_input_folder and is_within(out, folder)):
            raise OutputPathError(
                f'--output {out_dir!r} is (inside) the input folder '
                f'{folder!r}; outputs keep the input names and could replace '
                'the inputs. Pass an output folder outside the inputs.')


def image_suffix(name: str) -> str:
    """The extension a drawing named ``name`` is encoded with: its own, or
    ``.png`` appended when OpenCV cannot write that format."""
    return '' if cv2.haveImageWriter(name) else '.png'


def encode_image(name: str, image: np.ndarray) -> bytes:
    """``image`` encoded as the file ``name + image_suffix(name)`` would be
    (``cv2.imencode`` with ``cv2.imwrite``'s defaults: the same bytes)."""
    ext = osp.splitext(name + image_suffix(name))[1]
    ok, data = cv2.imencode(ext, image)
    if not ok:
        raise OSError(f'Could not encode image {name!r} as {ext}.')
    return data.tobytes()


def write_bytes(path: str, data: bytes) -> str:
    """Write ``data`` atomically (temporary name, then rename)."""
    with atomic_open(path, fsync=False) as f:
        f.write(data)
    return path


def write_image(path: str, image: np.ndarray,
                encoded: Optional[bytes] = None) -> str:
    """Write an image atomically; formats cv2 cannot write become ``.png``.

    Args:
        path: the file name wanted.
        image: (H, W, 3) uint8 BGR.
        encoded: ``encode_image(path, image)`` when already done (on a
            drawing worker); written as is.

    Returns:
        The path written.
    """
    if encoded is None:
        encoded = encode_image(path, image)
    return write_bytes(path + image_suffix(path), encoded)


def save_array(path: str, array: np.ndarray) -> str:
    """``np.save`` to a temporary name, then rename (atomic)."""
    with atomic_open(path, fsync=False) as f:
        np.save(f, array)
    return path


def write_text(path: str, text: str) -> str:
    """Write a text file atomically."""
    with atomic_open(path, 'w', fsync=False) as f:
        f.write(text)
    return path


class OutputLayout:
    """Output paths of one run (see the module docstring).

    Args:
        out_dir: the output folder (created).
        reader: the run's inputs.

    Raises:
        ValueError: ``out_dir`` is (inside) an input folder.
        PermissionError / NotADirectoryError: ``out_dir`` is not writable.
    """

    def __init__(self, out_dir: str, reader: FrameReader) -> None:
        check_output_outside_inputs(out_dir, reader)
        self.out_dir = check_writable_dir(out_dir, 'output folder',
                                          'Pass a writable --output folder.')
        self.protected = {osp.realpath(p) for p in reader.input_paths()}
        self.claimed: Dict[str, str] = {}
        self.listed: Dict[str, str] = {}

    def keep_listed(self, outputs: Dict[str, str]) -> None:
        """Never replace the earlier runs' outputs of other inputs.

        Args:
            outputs: output path relative to the folder -> the name of the
                frame (or video) the run index lists it for.
        """
        for relative, owner in outputs.items():
            path = osp.join(self.out_dir, *relative.split('/'))
            self.listed[osp.realpath(path)] = owner

    def path(self, relative: str, owner: str) -> str:
        """Absolute path of ``relative`` for the frame/video ``owner``.

        Raises:
            FileExistsError: the path is an input file, was written by
                another frame of this run or is listed in the run index as
                another input's output.
        """
        path = osp.join(self.out_dir, *relative.split('/'))
        real = osp.realpath(path)
        if real in self.protected:
            raise OutputExistsError(
                f'Output {path!r} would replace the input file of that name.')
        if self.listed.get(real, owner) != owner:
            raise OutputExistsError(
                f'Output {path!r} of {owner!r} is the output of '
                f'{self.listed[real]!r} listed in the run index; it is not '
                f'replaced. Rename {owner!r} or pass a new --output folder.')
        if self.claimed.setdefault(real, owner) != owner:
            raise OutputExistsError(
                f'Output {path!r} of {owner!r} was already written for '
                f'{self.claimed[real]!r} in this run.')
        os.makedirs(osp.dirname(path), exist_ok=True)
        return path

    def frame_path(self, frame: Frame, suffix: str) -> str:
        """``<out>/<stem><suffix>``, e.g. ``out/cam1/0001_seg.npy``."""
        return self.path(frame.stem + suffix, frame.name)

    def visualization_path(self, frame: Frame) -> str:
        """``<out>/<name>``: the visualization keeps the input's name
        (``.png`` appended where OpenCV cannot write its format)."""
        return self.path(frame.name + image_suffix(frame.name), frame.name)

    def relative(self, path: str) -> str:
        """``path`` relative to the output folder, with ``/``."""
        return osp.relpath(path, self.out_dir).replace(os.sep, '/')


class FrameSink:
    """Writes visualizations: image files, or one video per input video.

    A video is written under a hidden temporary name
    (``.<stem>.mp4.<random>.partial.mp4``) and renamed to ``<stem>.mp4`` by
    :meth:`finish_video` once all its frames are in.
    """

    def __init__(self, layout: OutputLayout) -> None:
        self.layout = layout
        self.videos: Dict[str, tuple] = {}
        self.written: List[str] = []

    def write(self, image: np.ndarray, frame: Frame,
              encoded: Optional[bytes] = None) -> str:
        """Write the drawing of ``frame``; returns its (final) path.

        ``encoded``: the image file's bytes (``encode_image(frame.name,
        image)``), for frames that are not video frames, when a drawing
        worker encoded them already.
        """
        if frame.video_name is None:
            path = write_image(self.layout.visualization_path(frame), image,
                               encoded)
            self.written.append(path)
            return path
        if frame.video_name not in self.videos:
            final = self.layout.path(frame.video_stem + '.mp4',
                                     frame.video_name)
            tmp = temporary_path(final)
            h, w = image.shape[:2]
            writer = cv2.VideoWriter(tmp, cv2.VideoWriter_fourcc(*'mp4v'),
                                     frame.fps or 25.0, (w, h))
            self.videos[frame.video_name] = (writer, tmp, final, (h, w))
        writer, _, final, size = self.videos[frame.video_name]
        if image.shape[:2] != size:
            image = cv2.resize(image, size[::-1])
        writer.write(image)
        return final

    def finish_video(self, name: str) -> Optional[str]:
        """Close video ``name`` and give it its final name."""
        if name not in self.videos:
            return None
        writer, tmp, final, _ = self.videos.pop(name)
        writer.release()
        finish_file(tmp, final, fsync=False)
        # temporaries of this video left by interrupted earlier runs
        folder, base = osp.split(final)
        for stale in os.listdir(folder):
            if stale.startswith(f'.{base}.') and \
                    stale.endswith(f'.partial{osp.splitext(base)[1]}'):
                os.remove(osp.join(folder, stale))
        self.written.append(final)
        return final

    def close(self) -> None:
        """Release unfinished videos (they keep their hidden temporary
        name)."""
        for writer, *_ in self.videos.values():
            writer.release()
        self.videos = {}


class TaskWriter:
    """Per-task output files of one ``tools/infer.py`` run.

    Args:
        layout: where files go.
        meta: the model's ``dataset_meta``.
        options: the task's options (:meth:`BaseTask.options`).
    """

    def __init__(self, layout: OutputLayout, meta: dict, options) -> None:
        self.layout, self.meta, self.options = layout, meta, options

    def write(self, frame: Frame, result) -> dict:
        """Write the frame's data files.

        Returns:
            JSON-able fields for the frame's index line; ``outputs`` lists the
            written files relative to the output folder.
        """
        return {'outputs': []}

    def finalize(self, records: List[dict]) -> List[str]:
        """Write summary files from every finished frame's index line (this
        run and earlier ones); returns lines for the run summary."""
        return []
