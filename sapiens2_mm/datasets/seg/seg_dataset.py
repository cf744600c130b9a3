"""Image + label-map datasets: any class set (:class:`SegDataset`) and the
29 Sapiens2 body-part classes (:class:`Seg29Dataset`)."""
import logging
import os.path as osp
from collections import Counter
from typing import List, Optional

from mmengine.logging import print_log
from mmseg.datasets import BaseSegDataset

from sapiens2_mm.metainfo.seg29 import seg29_metainfo
from sapiens2_mm.registry import DATASETS


@DATASETS.register_module()
class SegDataset(BaseSegDataset):
    """Pairs ``<img_path>/<name><img_suffix>`` with
    ``<seg_map_path>/<name>.png`` (single-channel class indices, 255 =
    ignore), as mmseg's :class:`BaseSegDataset`, for the classes of
    ``metainfo`` (``classes``, ``palette`` and, read by the config check of
    the tools, ``class_weight`` and ``flip_swap_pairs``: docs/custom_data.md),
    with a check that every listed file exists (the error names the missing
    file).

    A sample whose label map is entirely ``ignore_index`` after the pipeline
    (an unlabelled image, or one whose labelled part was cropped away) would
    train with loss 0 and report accuracy 100: in training it is skipped
    (mmengine draws another sample), in test mode kept; either way it is
    counted in :attr:`skipped` and logged (the first five, then at 10, 100,
    1000 ...).

    Args:
        check_files: verify at load time that each image and label exists.
        skip_all_ignored: the check above (on by default).
        **kwargs: :class:`BaseSegDataset` arguments (``data_root``,
            ``data_prefix``, ``ann_file``, ``pipeline``, ``img_suffix`` ...).
    """

    def __init__(self, check_files: bool = True, img_suffix: str = '.jpg',
                 seg_map_suffix: str = '.png', skip_all_ignored: bool = True,
                 **kwargs) -> None:
        self.check_files = check_files
        self.skip_all_ignored = skip_all_ignored
        self.skipped = Counter()
        if not (self.METAINFO or (kwargs.get('metainfo') or {}).get(
                'classes')):
            raise ValueError(
                f'{type(self).__name__} needs metainfo=dict(classes=..., '
                'palette=...) naming the classes of the label maps (docs/'
                'custom_data.md).')
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

    def _all_ignored(self, results: dict) -> bool:
        """Whether the sample's label map (before or after packing) holds
        nothing but ``ignore_index``."""
        seg = results.get('gt_seg_map')
        sample = results.get('data_samples')
        if seg is None and sample is not None and 'gt_sem_seg' in sample:
            seg = sample.gt_sem_seg.data
        if seg is None or tuple(seg.shape) == () or 0 in tuple(seg.shape):
            return False
        return bool((seg == self.ignore_index).all())

    def prepare_data(self, idx: int) -> Optional[dict]:
        """The pipeline output; in training None (mmengine then draws another
        sample) when every label pixel is ``ignore_index``."""
        results = super().prepare_data(idx)
        if (results is None or not self.skip_all_ignored
                or not self._all_ignored(results)):
            return results
        reason = 'label map entirely ignore_index'
        self.skipped[reason] += 1
        count = self.skipped[reason]
        if count <= 5 or count in (10, 100, 1000, 10000):
            action = ('kept (test mode; the metrics ignore it)' if
                      self.test_mode else 'skipped, another sample is drawn')
            print_log(
                f'{type(self).__name__}: every pixel of the label map of '
                f'{self.get_data_info(idx).get("img_path")} is '
                f'{self.ignore_index} (ignore) after the pipeline, which would '
                f'give loss 0 and accuracy 100: {action} ({count} so far in '
                'this process).', logger='current', level=logging.WARNING)
        return results if self.test_mode else None


@DATASETS.register_module()
class Seg29Dataset(SegDataset):
    """:class:`SegDataset` of the 29 Sapiens2 body-part classes (metainfo
    from seg29.json: classes, palette, class weights, flip swap pairs).

    A ``metainfo`` naming other classes is refused, pointing to
    :class:`SegDataset`: mmseg would otherwise remap a subset of the 29
    names silently and fail on others with "not a subset".
    """

    METAINFO = seg29_metainfo()

    def __init__(self, **kwargs) -> None:
        classes = (kwargs.get('metainfo') or {}).get('classes')
        if classes is not None and tuple(classes) != tuple(
                self.METAINFO['classes']):
            raise ValueError(
                f'Seg29Dataset holds the 29 Sapiens2 body-part classes; '
                f'metainfo names {len(classes)} other classes '
                f'({", ".join(map(str, list(classes)[:4]))}, ...). For your '
                "own classes use type='SegDataset' (this package, the same "
                "file checks) or 'mmseg.BaseSegDataset' with metainfo="
                'dict(classes=..., palette=...) (docs/custom_data.md).')
        super().__init__(**kwargs)
