"""The official Sapiens2 choice of cv2 interpolation for images.

mmcv's ``imresize`` and mmpose's ``TopdownAffine`` take one fixed
interpolation (bilinear by default); the official pipelines pick one per call,
with a different test for a plain resize and for a crop warp:

* resize (seg ``SegResize`` / ``SegRandomResize`` and the seg demo):
  ``cv2.INTER_AREA`` when the new **width** is smaller than the image width,
  ``cv2.INTER_CUBIC`` otherwise. Only the widths are compared: a 960x588
  frame resized to 768x1024 (narrower but taller, and larger in area) uses
  INTER_AREA, a 720x1280 frame (wider, smaller in area) INTER_CUBIC.
* crop warp (pose ``Sapiens2TopdownAffine``): ``cv2.INTER_AREA`` when the
  warp's scale factor, the smaller row norm of its 2x2 part, is below 1,
  ``cv2.INTER_CUBIC`` otherwise.

Label maps always use ``cv2.INTER_NEAREST``.
"""
import cv2
import numpy as np


def resize_interpolation(src_width: int, dst_width: int) -> int:
    """cv2 flag of the official image resize from ``src_width`` to ``dst_width``.

    Args:
        src_width: width of the image before resizing, in pixels.
        dst_width: width after resizing, in pixels.

    Returns:
        int: ``cv2.INTER_AREA`` if ``dst_width < src_width``, else
        ``cv2.INTER_CUBIC`` (equal widths included).
    """
    return cv2.INTER_AREA if dst_width < src_width else cv2.INTER_CUBIC


def warp_interpolation(warp: np.ndarray) -> int:
    """cv2 flag of the official top-down crop warp.

    Args:
        warp: affine matrix, shape (2, 3), image -> crop.

    Returns:
        int: ``cv2.INTER_AREA`` if the smaller row norm of ``warp[:, :2]`` is
        below 1 (the crop shrinks the image), else ``cv2.INTER_CUBIC``.
    """
    factor = np.linalg.norm(np.asarray(warp)[:, :2], axis=1).min()
    return cv2.INTER_AREA if factor < 1 else cv2.INTER_CUBIC


def resize_image(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize an image with the official interpolation rule.

    Args:
        img: image, shape (H, W) or (H, W, C).
        height: output height.
        width: output width.

    Returns:
        np.ndarray: shape (height, width) or (height, width, C); a (H, W, 1)
        input keeps its channel axis (cv2 drops it).
    """
    interp = resize_interpolation(img.shape[1], width)
    out = cv2.resize(img, (width, height), interpolation=interp)
    if img.ndim == 3 and out.ndim == 2:
        out = out[..., None]
    return out


def resize_label(seg: np.ndarray, height: int, width: int) -> np.ndarray:
    """Nearest-neighbour resize of a label map, (H, W) -> (height, width)."""
    return cv2.resize(seg, (width, height), interpolation=cv2.INTER_NEAREST)


def nearest_indices(src: int, dst: int,
                    interpolation: int = cv2.INTER_NEAREST) -> np.ndarray:
    """The source pixel that a nearest ``cv2.resize`` of one axis from
    ``src`` to ``dst`` pixels copies into each output pixel.

    cv2 resizes rows and columns independently with an index table that
    depends only on the two lengths and the flag, so resizing a ramp of
    indices reads the table out; ``array.take(rows, 0).take(cols, 1)`` then
    equals the resize of any array (a copy: no value is computed), and a part
    of the resized map can be made without the rest.

    Args:
        src: length of the axis before resizing.
        dst: length after resizing.
        interpolation: ``cv2.INTER_NEAREST`` (labels) or
            ``cv2.INTER_NEAREST_EXACT``.

    Returns:
        np.ndarray: int64 indices into ``range(src)``, shape (dst,).
    """
    ramp = np.arange(src, dtype=np.float32)[None]
    return cv2.resize(ramp, (dst, 1),
                      interpolation=interpolation)[0].astype(np.int64)

