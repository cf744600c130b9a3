"""Folder-layout datasets of the dense tasks: ``<data_root>/rgb/<name>.png``
plus one file per target in sibling folders with the same name."""
import logging
import os
import os.path as osp
from collections import Counter
from typing import Dict, List, Optional, Tuple

from mmengine.dataset import BaseDataset
from mmengine.logging import print_log


class BaseDenseDataset(BaseDataset):
    """Pairs every image of ``data_prefix['img_path']`` (default ``rgb/``,
    ``.png``, ``.jpg`` or ``.jpeg``) with the target files of the same name
    in the folders of :attr:`TARGETS`; the pipeline loads them
    (:class:`LoadDenseAnnotations`).

    Bad layouts are reported, never silently narrowed (the official datasets
    keep the intersection of the folders without saying what was left
    out): a missing folder or a folder without images raises
    ``FileNotFoundError`` naming it; an image whose target file is missing
    raises ``FileNotFoundError`` naming the missing files, or with
    ``skip_incomplete=True`` is skipped, counted in :attr:`skipped` (reason
    -> count) and summarised in one warning. Two files of one name in a
    folder (``a.png`` and ``a.jpg``) raise ``ValueError``.

    Args:
        data_root: dataset folder.
        data_prefix: sub-folder per path key, defaults from :attr:`TARGETS`
            and ``img_path='rgb'``.
        skip_incomplete: skip images whose target files are missing.
        with_mask: read ``mask/``; False: no mask files, every pixel whose
            target is valid (finite, non-zero normals; positive depth)
            counts.
        **kwargs: mmengine ``BaseDataset`` arguments (``pipeline``,
            ``test_mode``, ``indices`` ...).
    """

    #: path key -> (default folder, accepted suffixes, what it holds)
    TARGETS: Dict[str, Tuple[str, Tuple[str, ...], str]] = dict(
        mask_path=('mask', ('.png',), 'mask'))
    IMG_SUFFIXES = ('.png', '.jpg', '.jpeg')
    METAINFO: dict = dict()

    def __init__(self, data_root: str = '', data_prefix: Optional[dict] = None,
                 skip_incomplete: bool = False, with_mask: bool = True,
                 **kwargs) -> None:
        self.targets = {key: value for key, value in self.TARGETS.items()
                        if with_mask or key != 'mask_path'}
        prefix = dict(img_path='rgb')
        prefix.update({key: folder for key, (folder, _, _) in
                       self.targets.items()})
        prefix.update(data_prefix or {})
        self.skip_incomplete = skip_incomplete
        self.skipped: Dict[str, int] = Counter()
        super().__init__(data_root=data_root, data_prefix=prefix, **kwargs)

    def _index_folder(self, folder: str, suffixes: Tuple[str, ...],
                      what: str) -> Dict[str, str]:
        """name (without suffix) -> path of the files with ``suffixes``."""
        if not osp.isdir(folder):
            raise FileNotFoundError(
                f'{type(self).__name__}: {what} folder {folder!r} does not '
                'exist; check data_root and data_prefix.')
        index: Dict[str, str] = {}
        for fname in sorted(os.listdir(folder)):
            stem, ext = osp.splitext(fname)
            if ext.lower() not in suffixes:
                continue
            if stem in index:
                raise ValueError(
                    f'{type(self).__name__}: {folder!r} holds both '
                    f'{osp.basename(index[stem])!r} and {fname!r}; keep one '
                    'file per name.')
            index[stem] = osp.join(folder, fname)
        return index

    def load_data_list(self) -> List[dict]:
        img_dir = self.data_prefix['img_path']
        images = self._index_folder(img_dir, self.IMG_SUFFIXES, 'image')
        targets = {key: self._index_folder(self.data_prefix[key], suffixes,
                                           what)
                   for key, (_, suffixes, what) in self.targets.items()}
        if not images:
            raise FileNotFoundError(
                f'{type(self).__name__} found no {"/".join(self.IMG_SUFFIXES)} '
                f'images in {img_dir!r}.')
        data_list, missing = [], []
        for name, img_path in images.items():
            info = dict(img_path=img_path)
            absent = []
            for key, (_, suffixes, what) in self.targets.items():
                if name in targets[key]:
                    info[key] = targets[key][name]
                else:
                    absent.append((what, osp.join(self.data_prefix[key],
                                                  name + suffixes[0])))
            if not absent:
                data_list.append(info)
                continue
            missing += absent
            for what, _ in absent:
                self.skipped[f'missing {what}'] += 1
        if missing and not self.skip_incomplete:
            shown = '\n  '.join(f'{what}: {path}' for what, path in missing[:5])
            raise FileNotFoundError(
                f'{type(self).__name__}: {len(missing)} target files are '
                f'missing, e.g.\n  {shown}\nEvery image in {img_dir!r} needs '
                'one file per target with the same name; add them, or set '
                'skip_incomplete=True to skip such images.')
        if self.skipped:
            print_log(
                f'{type(self).__name__}: skipped {len(images) - len(data_list)}'
                f' of {len(images)} images ({dict(self.skipped)}).',
                logger='current', level=logging.WARNING)
        if not data_list:
            raise FileNotFoundError(
                f'{type(self).__name__}: no image in {img_dir!r} has all its '
                'target files.')
        return data_list
