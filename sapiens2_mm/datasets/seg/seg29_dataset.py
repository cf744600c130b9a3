"""Image + label-map dataset for the 29 Sapiens2 body-part classes."""
import os.path as osp
from typing import List

from mmseg.datasets import BaseSegDataset

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.registry import DATASETS


@DATASETS.register_module()
class Seg29Dataset(BaseSegDataset):
    """Pairs ``<img_path>/<name><img_suffix>`` with
    ``<seg_map_path>/<name>.png`` (single-channel class indices, 255 =
    ignore), as mmseg's :class:`BaseSegDataset`, with the seg29 metainfo
    (classes, palette, class weights, flip swap pairs) and a check that every
    listed file exists (the error names the missing file).

    Args:
        check_files: verify at load time that each image and label exists.
        **kwargs: :class:`BaseSegDataset` arguments (``data_root``,
            ``data_prefix``, ``ann_file``, ``pipeline``, ``img_suffix`` ...).
    """

    METAINFO = seg29_metainfo()

    def __init__(self, check_files: bool = True, img_suffix: str = '.jpg',
                 seg_map_suffix: str = '.png', **kwargs) -> None:
        self.check_files = check_files
        super().__init__(img_suffix=img_suffix, seg_map_suffix=seg_map_suffix,
                         reduce_zero_label=False, **kwargs)

    def load_data_list(self) -> List[dict]:
        img_dir = self.data_prefix.get('img_path', '')
        if not self.ann_file and not osp.isdir(img_dir):
            raise FileNotFoundError(
                f'Image folder {img_dir!r} of {type(self).__name__} does not '
                'exist; check data_root and data_prefix.img_path.')
        data_list = super().load_data_list()
        if not data_list:
            raise FileNotFoundError(
                f'{type(self).__name__} found no "*{self.img_suffix}" images '
                f'in {img_dir!r} (ann_file={self.ann_file!r}).')
        if self.check_files:
            for info in data_list:
                for key, what in (('img_path', 'Image'),
                                  ('seg_map_path', 'Label map')):
                    path = info.get(key)
                    if path is not None and not osp.isfile(path):
                        raise FileNotFoundError(
                            f'{what} {path!r} listed by {type(self).__name__} '
                            'does not exist; every image needs a label map '
                            f'with the same name and suffix '
                            f'{self.seg_map_suffix!r}.')
        return data_list
