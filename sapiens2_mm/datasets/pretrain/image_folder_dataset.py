"""Recursive folder of unlabelled images for self-supervised pretraining."""
import json
import logging
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence

import cv2
from mmengine.dataset import BaseDataset
from mmengine.logging import print_log

from ...registry import DATASETS

IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.bmp', '.webp', '.tif',
                    '.tiff')


def _decodes(path: str) -> bool:
    try:
        img = cv2.imread(path, cv2.IMREAD_COLOR)
    except cv2.error:
        return False
    return img is not None and img.size > 0


@DATASETS.register_module()
class ImageFolderDataset(BaseDataset):
    """Every image under ``data_root`` (recursively), sorted by path.

    Args:
        data_root: folder to walk (symlinked folders are followed, each
            real folder once: a link loop is listed once and logged).
        folders: sub-folders of ``data_root`` to walk instead of all of it.
        extensions: file suffixes taken as images (case-insensitive).
        verify: decode every file once at start-up and drop the unreadable
            ones (their count and first paths are logged, and kept in
            ``skipped``). For very large folders set False and load with
            ``Sapiens2LoadImage(skip_bad=True)``, which skips at load time.
        person_boxes: optional COCO-style JSON (``images`` with
            ``file_name``, ``annotations`` with ``bbox`` x, y, w, h and
            ``category_id`` 1 for persons) giving ``person_bboxes`` (N, 4)
            x1, y1, x2, y2 per image for the person-centric crop.
        pipeline: transforms.
        **kwargs: other :class:`mmengine.dataset.BaseDataset` arguments.

    Raises:
        FileNotFoundError: ``data_root`` is missing, or holds no readable
            image.
    """

    def __init__(self, data_root: str, folders: Sequence[str] = ('', ),
                 extensions: Sequence[str] = IMAGE_EXTENSIONS,
                 verify: bool = True,
                 person_boxes: Optional[str] = None,
                 pipeline: Sequence = (), **kwargs) -> None:
        self.folders = tuple(folders)
        self.extensions = tuple(ext.lower() for ext in extensions)
        self.verify = verify
        self.person_boxes = person_boxes
        self.skipped: List[str] = []
        super().__init__(data_root=data_root, pipeline=list(pipeline),
                         **kwargs)

    def _walk(self) -> List[str]:
        """Image paths under the folders, each real folder visited once.

        Symlinked folders are followed, but a folder reached again (a link
        loop such as ``self -> .``, or two links to one folder) is not
        listed again: with ``os.walk(followlinks=True)`` alone a loop lists
        every image ~40 times and two loops take exponential time. The
        folders left out are counted in :attr:`repeated_folders` and logged.
        """
        paths = []
        visited = set()
        self.repeated_folders: List[str] = []
        for sub in self.folders:
            root = osp.join(self.data_root, sub)
            if not osp.isdir(root):
                raise FileNotFoundError(
                    f'Image folder {root!r} does not exist or is not a '
                    'folder; set data_root (and folders) to folders of '
                    'images.')
            for folder, dirs, files in os.walk(root, followlinks=True):
                real = osp.realpath(folder)
                if real in visited:
                    self.repeated_folders.append(folder)
                    dirs[:] = []  # do not descend into it again
                    continue
                visited.add(real)
                dirs.sort()
                paths += [
                    osp.join(folder, name) for name in sorted(files)
                    if name.lower().endswith(self.extensions)
                ]
        if self.repeated_folders:
            print_log(
                f'ImageFolderDataset: {len(self.repeated_folders)} folder(s) '
                f'under {self.data_root!r} are symlinks to folders already '
                'listed (a link loop or a second link); their images are '
                f'listed once: {self.repeated_folders[:3]}',
                logger='current', level=logging.WARNING)
        return paths

    def _load_boxes(self) -> Dict[str, List[List[float]]]:
        with open(self.person_boxes) as f:
            coco = json.load(f)
        names = {img['id']: img['file_name'] for img in coco['images']}
        boxes: Dict[str, List[List[float]]] = {}
        for ann in coco.get('annotations', []):
            if ann.get('category_id', 1) != 1 or ann['image_id'] not in names:
                continue
            x, y, w, h = ann['bbox']
            if w > 1 and h > 1:
                boxes.setdefault(names[ann['image_id']],
                                 []).append([x, y, x + w, y + h])
        return boxes

    def load_data_list(self) -> List[dict]:
        paths = self._walk()
        if self.verify:
            good = [p for p in paths if _decodes(p)]
            self.skipped = sorted(set(paths) - set(good))
            paths = good
        if self.skipped:
            print_log(
                f'ImageFolderDataset skipped {len(self.skipped)} unreadable '
                f'file(s) under {self.data_root!r}, e.g. {self.skipped[:3]}',
                logger='current', level=logging.WARNING)
        if not paths:
            raise FileNotFoundError(
                f'No readable image ({", ".join(self.extensions)}) under '
                f'{self.data_root!r} ({len(self.skipped)} unreadable). Point '
                'data_root at a folder of images or add extensions.')
        boxes = self._load_boxes() if self.person_boxes else {}
        data_list = []
        for path in paths:
            info = dict(img_path=path)
            if self.person_boxes:
                rel = osp.relpath(path, self.data_root)
                info['person_bboxes'] = boxes.get(
                    rel, boxes.get(osp.basename(path), []))
            data_list.append(info)
        return data_list
