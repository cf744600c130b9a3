"""Draw dense predictions during ``tools/test.py --show-dir``.

mmseg's ``SegVisualizationHook`` draws label maps and mmpose's hook draws
keypoints; neither draws normals, depth or albedo, so this hook writes
``[image | prediction]`` (the official dense demos' layout, colors of
:mod:`sapiens2_mm.visualization.dense_drawer`) for each test sample, and
``[image | prediction | ground truth]`` when the sample carries its target at
the image size (the test pipelines keep targets at the original size).
"""
import os
import os.path as osp
from typing import Optional, Sequence, Tuple

import cv2
import numpy as np
from mmengine.hooks import Hook

from ...registry import HOOKS
from ...structures import dense_fields


def _channels_last(sample, names) -> dict:
    """name -> (H, W, C) float32 array of the PixelData fields present."""
    return {
        name: getattr(sample, name).data.detach().float().cpu().numpy()
        .transpose(1, 2, 0)
        for name in names if name in sample}


def _drawn_maps(prefix: str) -> Tuple[str, ...]:
    """``<prefix><name>`` of every declared map with a coloring."""
    return tuple(prefix + f.name for f in dense_fields()
                 if f.coloring is not None)


def ground_truth(sample, size) -> Tuple[dict, Optional[np.ndarray]]:
    """The sample's targets to draw beside the prediction, if any.

    Returns:
        ``({'gt_<name>': (H, W, C)}, (H, W) bool mask or None)`` for the
        declared maps with a coloring (``gt_normal``, ``gt_depth``,
        ``gt_albedo``, ...); empty when the targets are not at the image
        size ``size`` (H, W) (a pipeline that resized them). Depth is
        ``gt_depth`` or, without it, the z of ``gt_pointmap /
        canonical_scale``.
    """
    gt = _channels_last(sample, _drawn_maps('gt_'))
    if 'gt_depth' not in gt and 'gt_pointmap' in sample:
        scale = sample.metainfo.get('canonical_scale')
        if scale:
            points = _channels_last(sample, ('gt_pointmap', ))['gt_pointmap']
            gt['gt_depth'] = points[..., 2:3] / float(scale)
    gt = {k: v for k, v in gt.items() if v.shape[:2] == tuple(size)}
    mask = None
    if gt and 'gt_mask' in sample:
        mask = sample.gt_mask.data.detach().cpu().numpy()[0] > 0
        if mask.shape != tuple(size):
            return {}, None
    return gt, mask


@HOOKS.register_module()
class DenseVisualizationHook(Hook):
    """Write ``out_dir/<image name>`` (PNG when the name's format cannot be
    written) for every ``interval``-th test sample.

    A drawing never replaces a file: when the name is taken (an earlier run,
    another image of the same name in another folder, the input itself) it is
    written as ``<name>_1``, ``<name>_2`` ... (as mmpose's hook numbers its
    drawings). ``tools/test.py --show-dir`` also refuses a folder that holds
    files or lies in the dataset.

    Args:
        out_dir: the folder (created); required when enabled.
        interval: draw every interval-th sample.
        enable: off by default (``tools/test.py --show-dir`` switches it on).

    Raises:
        ValueError: enabled without ``out_dir``.
    """

    priority = 'NORMAL'

    def __init__(self, out_dir: Optional[str] = None, interval: int = 1,
                 enable: bool = False) -> None:
        if enable and not out_dir:
            raise ValueError('DenseVisualizationHook needs out_dir when '
                             'enabled (tools/test.py --show-dir DIR).')
        self.out_dir = out_dir
        self.interval = max(int(interval), 1)
        self.enable = enable
        self._count = 0

    def after_test_iter(self, runner, batch_idx: int, data_batch=None,
                        outputs: Optional[Sequence] = None) -> None:
        if not self.enable or not outputs:
            return
        from ...visualization import draw_dense_prediction
        os.makedirs(self.out_dir, exist_ok=True)
        for sample in outputs:
            self._count += 1
            if (self._count - 1) % self.interval:
                continue
            path = sample.metainfo['img_path']
            image = cv2.imread(path, cv2.IMREAD_COLOR)
            if image is None:
                runner.logger.warning(f'--show-dir: cannot read {path}; '
                                      'not drawn.')
                continue
            fields = _channels_last(sample, _drawn_maps('pred_'))
            gt, mask = ground_truth(sample, image.shape[:2])
            self._write(osp.join(self.out_dir, osp.basename(path)),
                        draw_dense_prediction(image, fields, gt, mask))

    @staticmethod
    def _write(path: str, image) -> str:
        """Write ``image`` under ``path`` or the first free name after it;
        returns the name written."""
        from ...utils.atomic_file import discard, temporary_path
        from ...utils.output_paths import rename_no_clobber
        if not cv2.haveImageWriter(path):
            path = path + '.png'
        tmp = temporary_path(path)
        try:
            if not cv2.imwrite(tmp, image):
                raise OSError(f'Could not write {path!r}.')
            return rename_no_clobber(tmp, path)
        finally:
            discard(tmp)
