"""Top-down crop warp with the official Sapiens2 interpolation rule."""
import cv2
import numpy as np
from mmcv.transforms import BaseTransform
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
        warp = self.warp_matrix(results, center, scale)
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

    def warp_matrix(self, results: dict, center: np.ndarray,
                    scale: np.ndarray) -> np.ndarray:
        """The (2, 3) image -> crop matrix of a box (aspect ratio fixed)."""
        w, h = self.input_size
        rot = results['bbox_rotation'][0] if 'bbox_rotation' in results else 0.
        make = get_udp_warp_matrix if self.use_udp else get_warp_matrix
        return make(center, scale, rot, output_size=(w, h))


@TRANSFORMS.register_module()
class Sapiens2TopdownCropSource(BaseTransform):
    """Cut the photo down to the part a later :class:`Sapiens2TopdownAffine`
    (same ``input_size`` and ``use_udp``) reads, and move the box and the
    keypoints with it.

    The warp enlarges a person crop to the network input (4096x3072 at 4K),
    and the official pipeline distorts colours after it, on the enlarged
    crop. Placed before a photometric step and the warp, this makes that
    step cheaper (it sees the source pixels of the crop, not the whole photo
    or the enlarged crop); the pipeline order photometric -> warp is the
    named option of docs/4k.md, not the official order. The region is the
    warp's source footprint plus 3 pixels for the cubic kernel, clipped to
    the photo, so the warp reads the same pixels; it moves the origin, and
    mmpose builds the warp matrix in float32, whose translation then rounds
    differently (about 1e-4 px). cv2 snaps sample positions to 1/32 px, so
    a few edge pixels are sampled 1/32 px apart (on the 4K sample: under
    0.1 % of the values, at most 9 grey levels; keypoints within 1e-3 px;
    tests/test_datasets/test_pose_crop_source.py).

    Args:
        input_size: the warp's crop (w, h).
        use_udp: the warp's UDP flag.
        margin: source pixels kept around the footprint (3: the cubic
            kernel reaches 2).

    Modified keys: ``img``, ``img_shape``, ``bbox_center``, ``bbox``,
    ``keypoints``.
    """

    def __init__(self, input_size, use_udp: bool = True,
                 margin: int = 3) -> None:
        self.warp = Sapiens2TopdownAffine(input_size, use_udp=use_udp)
        self.margin = margin

    def transform(self, results: dict) -> dict:
        w, h = self.warp.input_size
        scale = self.warp._fix_aspect_ratio(results['bbox_scale'],
                                            aspect_ratio=w / h)[0]
        warp = self.warp.warp_matrix(results, results['bbox_center'][0],
                                     scale)
        to_source = cv2.invertAffineTransform(warp)
        corners = np.array([[0, 0], [w, 0], [0, h], [w, h]], np.float64)
        source = corners @ to_source[:, :2].T + to_source[:, 2]
        img_h, img_w = results['img'].shape[:2]
        x0, y0 = np.floor(source.min(0)).astype(int) - self.margin
        x1, y1 = np.ceil(source.max(0)).astype(int) + self.margin
        x0, y0 = max(x0, 0), max(y0, 0)
        x1, y1 = min(x1, img_w), min(y1, img_h)
        if x1 <= x0 or y1 <= y0 or (x0, y0, x1, y1) == (0, 0, img_w, img_h):
            return results  # nothing of the photo is read, or all of it
        results['img'] = results['img'][y0:y1, x0:x1]
        results['img_shape'] = results['img'].shape[:2]
        # float64: a float32 centre moved by hundreds of pixels rounds to
        # 1e-4 px, which moves cv2's 1/32-px sampling grid at some pixels
        offset = np.array([x0, y0], np.float64)
        results['bbox_center'] = results['bbox_center'] - offset
        if results.get('bbox') is not None:
            results['bbox'] = results['bbox'] - np.tile(offset, 2)
        if results.get('keypoints') is not None:
            results['keypoints'] = results['keypoints'] - offset
        return results
