"""Top-down crop warp with the official Sapiens2 interpolation rule."""
import cv2
import numpy as np
from mmpose.datasets.transforms import TopdownAffine
from mmpose.structures.bbox import get_udp_warp_matrix, get_warp_matrix

from ....registry import TRANSFORMS
from ...transforms.interpolation import warp_interpolation


@TRANSFORMS.register_module()
class Sapiens2TopdownAffine(TopdownAffine):
    """mmpose's ``TopdownAffine`` with two official differences.

    * Interpolation: ``cv2.INTER_AREA`` when the warp shrinks (the smaller row
      norm of the 2x2 part is < 1), ``cv2.INTER_CUBIC`` otherwise (the official
      crop rule, :func:`warp_interpolation`; a plain seg resize compares the
      widths instead); mmpose always uses bilinear.
    * Keypoints that land outside the crop are zeroed and marked invisible, so
      their target weight is 0 (mmpose keeps them visible and relies on the
      codec dropping Gaussians that are fully outside the heatmap).

    Aspect-ratio fix, UDP matrix and meta keys are mmpose's.

    Args:
        input_size: crop (w, h).
        use_udp: UDP warp matrix (official: True).
        mark_outside_invisible: apply the second difference.
    """

    def __init__(self, input_size, use_udp: bool = True,
                 mark_outside_invisible: bool = True) -> None:
        super().__init__(input_size=tuple(input_size), use_udp=use_udp)
        self.mark_outside_invisible = mark_outside_invisible

    def transform(self, results: dict) -> dict:
        """Warp ``img`` (and keypoints) into the ``input_size`` crop."""
        w, h = self.input_size
        if results['bbox_center'].shape[0] != 1:
            raise ValueError(
                'Top-down pose takes one person per sample; got bbox_center of '
                f'shape {results["bbox_center"].shape}.')
        results['bbox_scale'] = self._fix_aspect_ratio(
            results['bbox_scale'], aspect_ratio=w / h)
        center = results['bbox_center'][0]
        scale = results['bbox_scale'][0]
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise ValueError(
                f'bbox_scale {scale} must be positive and finite (id '
                f'{results.get("id")}, image {results.get("img_path")}); check '
                'the box of this annotation.')
        rot = results['bbox_rotation'][0] if 'bbox_rotation' in results else 0.
        make = get_udp_warp_matrix if self.use_udp else get_warp_matrix
        warp = make(center, scale, rot, output_size=(w, h))
        results['img'] = cv2.warpAffine(results['img'], warp, (int(w), int(h)),
                                        flags=warp_interpolation(warp))
        if results.get('keypoints') is not None:
            kpts = results['keypoints'].copy()
            kpts[..., :2] = cv2.transform(results['keypoints'][..., :2], warp)
            if self.mark_outside_invisible:
                outside = ((kpts[..., 0] < 0) | (kpts[..., 0] >= w) |
                           (kpts[..., 1] < 0) | (kpts[..., 1] >= h))
                kpts[outside] = 0
                vis = results['keypoints_visible'].copy()
                vis[outside] = 0
                results['keypoints_visible'] = vis
            results['transformed_keypoints'] = kpts
        else:
            results['transformed_keypoints'] = np.zeros([])
            results['keypoints_visible'] = np.ones((1, 1, 1))
        results['input_size'] = (w, h)
        results['input_center'] = center
        results['input_scale'] = scale
        return results
