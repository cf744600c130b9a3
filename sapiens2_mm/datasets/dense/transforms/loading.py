"""Read and check the dense ground truth of one sample.

Bad files raise ``ValueError`` naming the file, what was found and what was
expected (or, with ``skip_bad=True`` in training, the sample is skipped and
counted). Invalid pixels are not errors: they leave the mask and are
counted in ``results['num_invalid_pixels']``.
"""
import logging
import os
import os.path as osp
from collections import Counter
from typing import Optional, Tuple

import cv2
import numpy as np
from mmcv.transforms import BaseTransform
from mmengine.logging import print_log

from sapiens2_mm.registry import TRANSFORMS
from sapiens2_mm.structures import dense_fields

from .reporting import should_log


class DenseFileError(ValueError):
    """A ground-truth file is missing, unreadable or malformed."""


def _check_size(path: str, array: np.ndarray, shape: Tuple[int, int],
                img_path: Optional[str]) -> None:
    if array.shape[:2] != tuple(shape):
        raise DenseFileError(
            f'{path} is {array.shape[0]}x{array.shape[1]} (HxW) but its image '
            f'{img_path} is {shape[0]}x{shape[1]}; every target file must have '
            'the size of its image. Resize or regenerate it.')


def read_mask(path: str) -> np.ndarray:
    """(H, W) bool: channel 0 of the PNG (BGR order as cv2 reads it) > 0."""
    mask = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if mask is None:
        raise DenseFileError(f'Cannot read mask {path}: missing or not an '
                             'image.')
    if mask.ndim == 3:
        mask = mask[..., 0]
    return mask > 0


#: Normal conventions a file may use -> the (x, y, z) signs that take it to
#: the one of the targets: OpenCV camera frame (x right, y down, z
#: forward), pointing toward the camera (docs/dense_data.md).
NORMAL_CONVENTIONS = {
    'opencv': (1, 1, 1),
    'opencv_away': (-1, -1, -1),  # the same axes, pointing away
    'opengl': (1, -1, -1),  # x right, y up, z toward the viewer
}
IMAGE_SUFFIXES = ('.png', '.tif', '.tiff', '.jpg', '.jpeg')
#: A decoded normal-map pixel is a normal when its length is 1 within this
#: (8-bit quantization moves it by at most 0.007).
ENCODED_NORMAL_TOLERANCE = 0.1


def read_image_file(path: str, what: str) -> np.ndarray:
    """An image file as stored (8/16-bit integers, EXR float), channels in
    RGB order, alpha dropped.

    OpenCV disables its OpenEXR decoder unless ``OPENCV_IO_ENABLE_OPENEXR``
    is set (the decoder had vulnerabilities): an ``.exr`` is read only then,
    never by switching it on here.
    """
    if path.lower().endswith('.exr') and \
            os.environ.get('OPENCV_IO_ENABLE_OPENEXR', '').lower() not in (
                '1', 'true', 'on', 'yes'):
        raise DenseFileError(
            f'{what} {path} is an EXR file; OpenCV reads EXR only with '
            'OPENCV_IO_ENABLE_OPENEXR=1 in the environment (off by default '
            'because of past vulnerabilities in its decoder: set it for data '
            'you trust), or convert the file to .npy.')
    data = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if data is None:
        raise DenseFileError(f'Cannot read {what} {path}: missing or not an '
                             'image.')
    if data.ndim == 3 and data.shape[2] == 4:
        data = data[..., :3]
    if data.ndim == 3:
        data = data[..., ::-1]
    return np.ascontiguousarray(data)


def _unit_range(data: np.ndarray, path: str, what: str) -> np.ndarray:
    """8/16-bit integers -> [0, 1] floats; float files pass unchanged."""
    if data.dtype == np.uint8:
        return data.astype(np.float32) / 255.0
    if data.dtype == np.uint16:
        return data.astype(np.float32) / 65535.0
    if data.dtype.kind == 'f':
        return data.astype(np.float32)
    raise DenseFileError(f'{what} {path} holds {data.dtype} values; expected '
                         '8- or 16-bit integers or floats.')


def read_normal(path: str, convention: str = 'opencv') -> np.ndarray:
    """(H, W, 3) float32 camera-frame normals of the targets' convention.

    * ``.npy`` / ``.npz['normal']``: the vectors as stored;
    * ``.png`` / ``.tif`` (8- or 16-bit RGB normal map): ``n = 2 c - 1``
      with ``c`` the colour in [0, 1], R, G, B holding x, y, z (the usual
      normal-map encoding); a pixel whose vector is not of unit length
      (+-:data:`ENCODED_NORMAL_TOLERANCE`: a black or grey background)
      becomes the zero vector, i.e. invalid; lossy ``.jpg`` is refused;
    * ``.exr`` (float RGB): the vectors as stored.

    ``convention`` names the frame of the file (:data:`NORMAL_CONVENTIONS`);
    the vectors are converted to OpenCV pointing toward the camera.
    """
    if convention not in NORMAL_CONVENTIONS:
        raise ValueError(f'normal_convention must be one of '
                         f'{sorted(NORMAL_CONVENTIONS)}, got {convention!r}.')
    suffix = osp.splitext(path)[1].lower()
    if suffix in ('.jpg', '.jpeg'):
        raise DenseFileError(
            f'Normals {path}: JPEG compression shifts the encoded vectors; '
            'store normal maps as 8/16-bit PNG, EXR or .npy.')
    if suffix in IMAGE_SUFFIXES + ('.exr', ):
        data = read_image_file(path, 'Normals')
        if data.ndim != 3 or data.shape[2] != 3:
            raise DenseFileError(f'Normals {path} have shape {data.shape}, '
                                 'expected an RGB normal map.')
        floats = _unit_range(data, path, 'Normals')
        if data.dtype.kind != 'f':
            data = 2.0 * floats - 1.0
            # an encoded map holds no zero vector: its background (black,
            # mid-grey) decodes to lengths far from 1, and becomes invalid
            length = np.linalg.norm(data, axis=2, keepdims=True)
            data = np.where(np.abs(length - 1) <= ENCODED_NORMAL_TOLERANCE,
                            data, 0.0)
        else:
            data = floats
    else:
        data = _read_normal_array(path)
    signs = np.asarray(NORMAL_CONVENTIONS[convention], np.float32)
    return (data.astype(np.float32) * signs).astype(np.float32)


def _read_normal_array(path: str) -> np.ndarray:
    """(H, W, 3) float32 from ``.npy`` or ``.npz['normal']``."""
    try:
        data = np.load(path)
    except Exception as err:  # noqa: BLE001 - re-raised with the path
        raise DenseFileError(f'Cannot read normals {path}: {err}.') from err
    if isinstance(data, np.lib.npyio.NpzFile):
        with data:
            if 'normal' not in data.files:
                raise DenseFileError(
                    f'{path} has arrays {data.files}, expected one named '
                    '"normal" (H, W, 3).')
            data = data['normal']
    if data.ndim != 3 or data.shape[2] != 3:
        raise DenseFileError(f'Normals {path} have shape {data.shape}, '
                             'expected (H, W, 3).')
    return data.astype(np.float32)


def read_depth(path: str, depth_scale: Optional[float] = None) -> np.ndarray:
    """(H, W) float32 metric depth (camera Z).

    * ``.npy``: metres as stored;
    * ``.png`` / ``.tif`` (16-bit, one channel): ``value / depth_scale``
      (``depth_scale`` = stored units per metre, e.g. 1000 for millimetres;
      0 stays 0, an invalid pixel); 8-bit files are refused (256 levels
      cannot hold metric depth);
    * ``.exr`` (float, one channel or three equal ones): metres as stored.
    """
    suffix = osp.splitext(path)[1].lower()
    if suffix in IMAGE_SUFFIXES + ('.exr', ):
        depth = read_image_file(path, 'Depth')
        if depth.ndim == 3 and np.array_equal(depth[..., 0], depth[..., 1]) \
                and np.array_equal(depth[..., 0], depth[..., 2]):
            depth = depth[..., 0]
        if depth.dtype == np.uint8:
            raise DenseFileError(
                f'Depth {path} is an 8-bit image: 256 levels cannot hold '
                'metric depth. Store 16-bit PNG with depth_scale, EXR or .npy.')
        if depth.dtype.kind in 'ui':
            if not depth_scale:
                raise DenseFileError(
                    f'Depth {path} holds {depth.dtype} integers: set '
                    'depth_scale of LoadDenseAnnotations to the stored units '
                    'per metre (1000 for millimetres).')
            depth = depth.astype(np.float32) / float(depth_scale)
    else:
        try:
            depth = np.load(path)
        except Exception as err:  # noqa: BLE001 - re-raised with the path
            raise DenseFileError(f'Cannot read depth {path}: {err}.') from err
    if depth.ndim == 3 and depth.shape[2] == 1:
        depth = depth[..., 0]
    if depth.ndim != 2:
        raise DenseFileError(f'Depth {path} has shape {depth.shape}, '
                             'expected (H, W) metric depth.')
    return depth.astype(np.float32)


def read_matrix(path: str, what: str) -> np.ndarray:
    """3x3 intrinsics or 4x4 world-to-camera extrinsics from a text file."""
    try:
        mat = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except Exception as err:  # noqa: BLE001 - re-raised with the path
        raise DenseFileError(f'Cannot read {what} {path}: {err}.') from err
    expected = (3, 3) if what == 'intrinsics' else (4, 4)
    if what == 'extrinsics' and mat.shape == (3, 4):
        mat = np.vstack([mat, [0.0, 0.0, 0.0, 1.0]])
    if mat.shape != expected:
        raise DenseFileError(
            f'{what.capitalize()} {path} hold a {mat.shape[0]}x{mat.shape[1]} '
            f'matrix; expected {expected[0]}x{expected[1]}.')
    if not np.isfinite(mat).all():
        raise DenseFileError(f'{what.capitalize()} {path} hold non-finite '
                             f'values: {mat.tolist()}.')
    if what == 'intrinsics' and not (mat[0, 0] > 0 and mat[1, 1] > 0 and
                                     np.allclose(mat[2], [0, 0, 1])):
        raise DenseFileError(
            f'Intrinsics {path} = {mat.tolist()} are not a pinhole matrix '
            '[[fx, s, cx], [0, fy, cy], [0, 0, 1]] with fx, fy > 0.')
    if what == 'extrinsics' and not np.allclose(mat[3], [0, 0, 0, 1]):
        raise DenseFileError(f'Extrinsics {path} have last row '
                             f'{mat[3].tolist()}, expected [0, 0, 0, 1].')
    return mat


def read_albedo(path: str) -> np.ndarray:
    """(H, W, 3) float32 RGB in [0, 1]: the 8-bit (/ 255) or 16-bit
    (/ 65535) sRGB values of a PNG / JPEG / TIFF file."""
    img = read_image_file(path, 'Albedo')
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    if img.dtype.kind == 'f':
        raise DenseFileError(f'Albedo {path} holds floats; expected 8- or '
                             '16-bit sRGB values.')
    return _unit_range(img, path, 'Albedo')


def read_map(path: str, channels: int) -> np.ndarray:
    """A declared map without a reader of its own: ``.npy`` (float32 as
    stored) or an image (values / 255; grey for one channel, RGB for three).
    A one-channel map is (H, W), others (H, W, C).
    """
    if path.endswith('.npy'):
        try:
            data = np.load(path).astype(np.float32)
        except Exception as err:  # noqa: BLE001 - re-raised with the path
            raise DenseFileError(f'Cannot read {path}: {err}.') from err
    else:
        flag = cv2.IMREAD_GRAYSCALE if channels == 1 else cv2.IMREAD_COLOR
        data = cv2.imread(path, flag)
        if data is None:
            raise DenseFileError(f'Cannot read {path}: missing or not an '
                                 'image.')
        data = data.astype(np.float32) / 255.0
        data = data if channels == 1 else data[..., ::-1]
    if channels == 1 and data.ndim == 3 and data.shape[2] == 1:
        data = data[..., 0]
    expected = (2, None) if channels == 1 else (3, channels)
    if (data.ndim, data.shape[2] if data.ndim == 3 else None) != expected:
        shape = '(H, W)' if channels == 1 else f'(H, W, {channels})'
        raise DenseFileError(f'{path} has shape {data.shape}, expected '
                             f'{shape}.')
    return np.ascontiguousarray(data)


#: Maps read by their own readers above; every other declared map
#: ``<name>`` is read from ``<name>_path`` by :func:`read_map`.
OWN_READERS = ('normal', 'depth', 'albedo', 'pointmap')


@TRANSFORMS.register_module()
class LoadDenseAnnotations(BaseTransform):
    """Load the ground truth named by the ``*_path`` keys of a sample.

    Runs after :class:`Sapiens2LoadImage`. Reads ``mask_path`` ->
    ``gt_mask`` (H, W) bool, ``normal_path`` -> ``gt_normal`` (H, W, 3),
    ``depth_path`` -> ``gt_depth`` (H, W), ``cam_K_path`` -> ``cam_K``,
    ``gt_cam_K`` and ``ori_cam_K`` (3x3), ``cam_extrinsics_path`` ->
    ``cam_extrinsics`` (4x4) and ``albedo_path`` -> ``gt_albedo`` (H, W, 3)
    RGB in [0, 1]; any other declared map ``<name>``
    (:mod:`~sapiens2_mm.structures.dense_outputs`) from ``<name>_path`` ->
    ``gt_<name>`` (:func:`read_map`). Every map must have the image's size.

    Invalid pixels leave the mask and are set to 0: non-finite or zero
    normals; depth that is NaN and, with ``depth_invalid='nonpositive'``
    (default), also +-inf and <= 0. The official code masks only NaN depth
    (``depth_invalid='nan'``), so inf and <= 0 depth reach the targets there.
    Normals are re-normalized to unit length (official); files whose
    normals are mostly far from unit length (more than half the masked
    pixels off by more than ``normal_norm_tolerance``, e.g. colors in
    [0, 1] instead of vectors) raise instead of being silently rescaled.

    Args:
        depth_invalid: ``'nonpositive'`` or ``'nan'`` (official).
        normal_norm_tolerance: see above; None re-normalizes anything.
        normal_convention: the frame of the normal files: ``'opencv'``
            (x right, y down, z forward, pointing toward the camera: the
            targets' convention), ``'opencv_away'`` (pointing away) or
            ``'opengl'`` (x right, y up, z toward the viewer); see
            :func:`read_normal` for the file formats.
        depth_scale: stored units per metre of integer depth images (16-bit
            PNG: 1000 for millimetres); see :func:`read_depth`.
        skip_bad: return None (skip the sample, count it in
            :attr:`skipped` and log it: the first ten, then the 100th,
            1000th, ...) instead of raising on a bad file.
            For training only: test-time datasets refuse None.

    Adds ``num_invalid_pixels`` (pixels removed from the mask).
    """

    def __init__(self, depth_invalid: str = 'nonpositive',
                 normal_norm_tolerance: Optional[float] = 0.25,
                 skip_bad: bool = False, normal_convention: str = 'opencv',
                 depth_scale: Optional[float] = None) -> None:
        if depth_invalid not in ('nonpositive', 'nan'):
            raise ValueError("depth_invalid must be 'nonpositive' or 'nan', "
                             f'got {depth_invalid!r}.')
        if normal_convention not in NORMAL_CONVENTIONS:
            raise ValueError(
                f'normal_convention must be one of '
                f'{sorted(NORMAL_CONVENTIONS)}, got {normal_convention!r}.')
        if depth_scale is not None and not depth_scale > 0:
            raise ValueError(f'depth_scale must be > 0, got {depth_scale!r}.')
        self.normal_convention = normal_convention
        self.depth_scale = depth_scale
        self.depth_invalid = depth_invalid
        self.normal_norm_tolerance = normal_norm_tolerance
        self.skip_bad = skip_bad
        self.skipped = Counter()

    def _normals(self, path: str, normal: np.ndarray,
                 mask: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        norm = np.linalg.norm(normal, axis=2)
        valid = np.isfinite(normal).all(axis=2) & (norm > 1e-6)
        norm_in = norm[mask & valid]
        tol = self.normal_norm_tolerance
        if tol is not None and norm_in.size and \
                np.mean(np.abs(norm_in - 1) > tol) > 0.5:
            raise DenseFileError(
                f'Normals {path} are not unit vectors: the median length over '
                f'the mask is {np.median(norm_in):.3f}. Expected camera-frame '
                'unit normals; a file of colors c in [0, 1] needs n = 2c - 1 '
                'first. Set normal_norm_tolerance=None to re-normalize anyway.')
        out = np.where(valid[..., None], normal / np.where(valid, norm, 1)[
            ..., None], 0.0).astype(np.float32)
        return out, valid

    def _depth(self, depth: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        if self.depth_invalid == 'nan':
            valid = ~np.isnan(depth)
        else:
            valid = np.isfinite(depth) & (depth > 0)
        return np.where(valid, depth, 0.0).astype(np.float32), valid

    def _load(self, results: dict) -> dict:
        shape = results['img'].shape[:2]
        img_path = results.get('img_path')
        valid = np.ones(shape, dtype=bool)
        mask = None
        if results.get('mask_path'):
            mask = read_mask(results['mask_path'])
            _check_size(results['mask_path'], mask, shape, img_path)
        if results.get('normal_path'):
            path = results['normal_path']
            normal = read_normal(path, self.normal_convention)
            _check_size(path, normal, shape, img_path)
            results['gt_normal'], ok = self._normals(
                path, normal, mask if mask is not None else valid)
            valid &= ok
        if results.get('depth_path'):
            depth = read_depth(results['depth_path'], self.depth_scale)
            _check_size(results['depth_path'], depth, shape, img_path)
            results['gt_depth'], ok = self._depth(depth)
            valid &= ok
        if results.get('cam_K_path'):
            K = read_matrix(results['cam_K_path'], 'intrinsics')
            results['cam_K'], results['gt_cam_K'] = K, K.copy()
            results['ori_cam_K'] = K.copy()
        if results.get('cam_extrinsics_path'):
            results['cam_extrinsics'] = read_matrix(
                results['cam_extrinsics_path'], 'extrinsics')
        if results.get('albedo_path'):
            albedo = read_albedo(results['albedo_path'])
            _check_size(results['albedo_path'], albedo, shape, img_path)
            results['gt_albedo'] = albedo
        for field in dense_fields():
            path = results.get(f'{field.name}_path')
            if field.name in OWN_READERS or not path:
                continue
            value = read_map(path, field.channels)
            _check_size(path, value, shape, img_path)
            results[field.gt] = value
        if mask is None:
            mask = valid
        results['num_invalid_pixels'] = int(np.count_nonzero(mask & ~valid))
        results['gt_mask'] = mask & valid
        return results

    def transform(self, results: dict) -> Optional[dict]:
        try:
            return self._load(results)
        except DenseFileError as err:
            if not self.skip_bad:
                raise
            self.skipped['bad file'] += 1
            if should_log(self.skipped['bad file']):
                print_log(f'Skipping sample {results.get("img_path")}: {err} '
                          f'({self.skipped["bad file"]} skipped so far in '
                          'this worker).', logger='current',
                          level=logging.WARNING)
            return None
