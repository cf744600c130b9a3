"""Point mmpose's dataset classes at their installed metainfo files.

mmpose's dataset classes name their keypoint metainfo relative to the mmpose
source tree (``CocoDataset.METAINFO = dict(from_file=
'configs/_base_/datasets/coco.py')``). Outside that tree the file is not found,
and mmpose falls back to the copy under ``mmpose/.mim/configs/_base_/datasets``
with a UserWarning ("The metainfo config file ... does not exist") on every
run. We set each such class default to the absolute path of that same file, so
mmpose reads exactly what it would read anyway, without the warning. Classes
whose relative file exists (run from an mmpose checkout) are left alone.
"""
import os.path as osp
from typing import List


def use_installed_mmpose_metainfo() -> List[str]:
    """Rewrite relative ``METAINFO['from_file']`` of mmpose's dataset classes.

    Returns:
        Names of the classes whose default was rewritten.
    """
    import mmpose
    import mmpose.datasets  # noqa: F401 - fills mmpose's DATASETS
    from mmpose.registry import DATASETS

    mim_dir = osp.join(osp.dirname(mmpose.__file__), '.mim', 'configs',
                       '_base_', 'datasets')
    changed = []
    for name, cls in DATASETS.module_dict.items():
        metainfo = getattr(cls, 'METAINFO', None)
        if not isinstance(metainfo, dict) or 'from_file' not in metainfo:
            continue
        path = metainfo['from_file']
        installed = osp.join(mim_dir, osp.basename(path))
        if osp.isabs(path) or osp.isfile(path) or not osp.isfile(installed):
            continue
        # A new dict on the class itself: a parent's METAINFO stays untouched.
        cls.METAINFO = dict(metainfo, from_file=installed)
        changed.append(name)
    return changed
