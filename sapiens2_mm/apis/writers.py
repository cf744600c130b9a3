"""Write inference results: keypoint JSON, label .npy, images and videos.

Keypoint JSON schema (the official pose demo's, plus per-frame size
and box scores)::

    {"video": null | "path/of/first/video.mp4",
     "image_size": [H, W],            # of the first frame
     "num_keypoints": K,
     "keypoint_names": [...K names],
     "kpt_thr_used": 0.3,
     "frames": [{"image_name": "a.jpg", "image_size": [H, W],
                 "instances": [{"bbox": [x1, y1, x2, y2], "bbox_score": s,
                                "keypoints": [[x, y] * K],
                                "keypoint_scores": [K floats]}]}]}

Keypoints are in the pixels of the input image. Label maps are written as
``<stem>_seg.npy``: (H, W) int64 class indices at the input resolution.
"""
import json
import os
import os.path as osp
from typing import Dict, List, Optional

import cv2
import numpy as np

from .results import PoseResult


def check_writable_dir(path: str) -> str:
    """Create ``path`` if needed and make sure files can be written there.

    Raises:
        PermissionError / NotADirectoryError: with the path and what to do.
    """
    if osp.exists(path) and not osp.isdir(path):
        raise NotADirectoryError(
            f'Output path {path!r} exists and is not a folder; pass a folder.')
    try:
        os.makedirs(path, exist_ok=True)
        probe = osp.join(path, '.sapiens2_write_test')
        with open(probe, 'w') as f:
            f.write('')
        os.remove(probe)
    except OSError as err:
        raise PermissionError(
            f'Cannot write to output folder {path!r} ({err.strerror}). Pass '
            'a writable --output folder.') from err
    return path


class PoseJsonWriter:
    """Collects :class:`PoseResult` frames and writes one JSON file."""

    def __init__(self, meta: dict, kpt_thr: float) -> None:
        self.meta, self.kpt_thr = meta, kpt_thr
        self.frames: List[dict] = []
        self.first: Optional[PoseResult] = None

    def add(self, result: PoseResult) -> None:
        if self.first is None:
            self.first = result
        entry = result.to_dict()
        entry['image_size'] = list(result.image_size)
        self.frames.append(entry)

    def write(self, path: str) -> str:
        names = self.meta.get('keypoint_id2name', {})
        num = int(self.meta['num_keypoints'])
        data = dict(
            video=self.first.video if self.first is not None else None,
            image_size=list(self.first.image_size) if self.first else None,
            num_keypoints=num,
            keypoint_names=[names.get(i, str(i)) for i in range(num)],
            kpt_thr_used=self.kpt_thr,
            frames=self.frames)
        with open(path, 'w') as f:
            json.dump(data, f)
        return path


def save_label_map(out_dir: str, name: str, label_map: np.ndarray) -> str:
    """Write ``<stem>_seg.npy`` (int64) and return its path."""
    path = osp.join(out_dir, osp.splitext(name)[0] + '_seg.npy')
    np.save(path, label_map.astype(np.int64))
    return path


class FrameSink:
    """Writes visualisations: image files, or one video per input video."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.videos: Dict[str, cv2.VideoWriter] = {}
        self.written: List[str] = []

    def write(self, image: np.ndarray, name: str,
              video: Optional[str] = None, fps: Optional[float] = None) -> None:
        if video is None:
            path = osp.join(self.out_dir, name)
            if not cv2.imwrite(path, image):
                path = osp.splitext(path)[0] + '.png'
                cv2.imwrite(path, image)
            self.written.append(path)
            return
        if video not in self.videos:
            stem = osp.splitext(osp.basename(video))[0]
            path = osp.join(self.out_dir, stem + '.mp4')
            h, w = image.shape[:2]
            self.videos[video] = cv2.VideoWriter(
                path, cv2.VideoWriter_fourcc(*'mp4v'), fps or 25.0, (w, h))
            self.written.append(path)
        self.videos[video].write(image)

    def close(self) -> None:
        for writer in self.videos.values():
            writer.release()
        self.videos = {}
