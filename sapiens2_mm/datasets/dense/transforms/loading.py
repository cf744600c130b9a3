"""Read and check the dense ground truth of one sample.

Bad files raise ``ValueError`` naming the file, what was found and what was
expected (or, with ``skip_bad=True`` in training, the sample is skipped and
counted). Invalid pixels are not errors: they leave the mask and are
counted in ``results['num_invalid_pixels']``.
"""
import logging
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


def read_normal(path: str) -> np.ndarray:
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


def read_depth(path: str) -> np.ndarray:
    """(H, W) float32 metric depth from ``.npy``."""
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
    """(H, W, 3) float32 RGB in [0, 1] (the PNG's sRGB values / 255)."""
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise DenseFileError(f'Cannot read albedo {path}: missing or not an '
                             'image.')
    return img[..., ::-1].astype(np.float32) / 255.0


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
        skip_bad: return None (skip the sample, count it in
            :attr:`skipped` and log it: the first ten, then the 100th,
            1000th, ...) instead of raising on a bad file.
            For training only: test-time datasets refuse None.

    Adds ``num_invalid_pixels`` (pixels removed from the mask).
    """

    def __init__(self, depth_invalid: str = 'nonpositive',
                 normal_norm_tolerance: Optional[float] = 0.25,
                 skip_bad: bool = False) -> None:
        if depth_invalid not in ('nonpositive', 'nan'):
            raise ValueError("depth_invalid must be 'nonpositive' or 'nan', "
                             f'got {depth_invalid!r}.')
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
            normal = read_normal(path)
            _check_size(path, normal, shape, img_path)
            results['gt_normal'], ok = self._normals(
                path, normal, mask if mask is not None else valid)
            valid &= ok
        if results.get('depth_path'):
            depth = read_depth(results['depth_path'])
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
