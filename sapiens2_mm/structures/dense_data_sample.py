"""The data sample shared by the dense tasks (normal, pointmap, albedo, and
any task declared in :mod:`sapiens2_mm.structures.dense_outputs`).

One structure travels from the dense datasets through the estimator to the
metrics and writers, so every piece agrees on the field names:

Ground truth (``mmengine.structures.PixelData``, at the network input size
after the training transforms, or at the original size for evaluation):

* ``gt_normal``: data (3, H, W) float32, unit camera-frame normals.
* ``gt_pointmap``: data (3, H, W) float32, the canonical pointmap
  (metric X, Y, Z times ``canonical_scale``), 0 at invalid pixels.
* ``gt_depth``: data (1, H, W) float32, metric depth (pointmap task).
* ``gt_albedo``: data (3, H, W) float32, RGB albedo in [0, 1].
* ``gt_mask``: data (1, H, W) bool, valid pixels.
* ``gt_<name>`` of any other declared map (``dense_target_fields()``).

Predictions (``PixelData``, at the original image size after the letterbox is
removed): ``pred_normal`` (3, H, W), ``pred_pointmap`` (3, H, W),
``pred_depth`` (1, H, W), ``pred_albedo`` (3, H, W); the pointmap scale is the
metainfo ``pred_scale`` (float) and the focal length ``pred_focal_length``.

Metainfo keys: ``img_path``, ``ori_shape`` (H, W), ``img_shape`` (H, W),
``padding_size`` (left, right, top, bottom) of the letterbox,
``scale_factor``, ``flip``, ``cam_K`` (3x3 intrinsics after every geometric
transform, before the canonical rescale; the official ``original_K``),
``canonical_scale`` (768 / fx; the official ``scale``, renamed because it
collides with mmcv Resize's ``scale``), ``cam_extrinsics`` (4x4),
``gt_mean_depth`` (float).
"""
from mmengine.structures import BaseDataElement


class DenseDataSample(BaseDataElement):
    """Data sample of the dense tasks; see the module docstring for fields."""
