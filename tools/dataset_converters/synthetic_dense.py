"""Procedural scenes with exact dense ground truth (normals, depth, albedo).

A pinhole camera ray-casts a human-sized capsule figure standing on a floor
patch, with spheres, boxes and an optional back wall. Every pixel hit gets
its exact surface normal, metric depth (camera Z), world position and a
textured albedo; the image is Lambertian shading of that albedo under one
directional light plus ambient light. Everything is numpy-vectorised (one
array of rays per scene) and deterministic from a seed.

Conventions (the ones the dense datasets read):

* Camera frame: OpenCV, x right, y down, z forward. Pixel ``(u, v)``
  (column, row, integer at the pixel centre) sees the ray
  ``((u - cx) / fx, (v - cy) / fy, 1)``; depth is the Z coordinate, so
  ``X = (u - cx) Z / fx`` and ``Y = (v - cy) Z / fy`` recover the point.
* Extrinsics: the 4x4 world-to-camera matrix ``[R | t]`` (OpenCV), so
  ``p_cam = R p_world + t``. The world frame has z up and the floor at z=0.
* Normals: unit vectors in the camera frame. ``normal_convention`` selects
  how they are written (see :data:`NORMAL_CONVENTIONS`):
  ``'opencv'`` (default) keeps the OpenCV axes with normals pointing toward
  the camera (n . ray < 0 for the viewing ray of the pixel, so a surface
  straight ahead has n_z < 0); ``'opencv_away'``
  negates them (pointing away from the camera, the orientation of
  ``cross(right, down)`` on a back-projected pointmap); ``'opengl'`` uses
  x right, y up, z toward the viewer (n_opengl = (n_x, -n_y, -n_z) of the
  toward-camera OpenCV normal, so a surface straight ahead has n_z > 0).
* Albedo: sRGB values in [0, 1], quantised to k/255 so the PNG stores them
  exactly. Shading is applied in linear RGB and the image is re-encoded
  to sRGB.
* Background (no surface hit): mask 0, depth 0, normal 0, albedo 0 and a
  sky gradient in the image.
"""
import os
import os.path as osp
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np

#: Sign applied per axis to the toward-camera OpenCV normal.
NORMAL_CONVENTIONS: Dict[str, Tuple[float, float, float]] = {
    'opencv': (1.0, 1.0, 1.0),
    'opencv_away': (-1.0, -1.0, -1.0),
    'opengl': (1.0, -1.0, -1.0),
}

#: The official drop filters the generated scenes must pass.
OFFICIAL_FILTERS = dict(min_mask_pixels=16, max_mask_ratio=0.96,
                        min_canonical_depth=0.04, min_albedo_std=0.02,
                        canonical_focal_length=768.0)

_EPS = 1e-9


@dataclass
class SyntheticScene:
    """One rendered scene; arrays are (H, W, ...) in the camera frame.

    Attributes:
        image: (H, W, 3) uint8 RGB.
        albedo: (H, W, 3) float32 sRGB in [0, 1] (multiples of 1/255).
        normal: (H, W, 3) float32 unit normals in ``normal_convention``;
            0 on the background.
        depth: (H, W) float32 metric camera Z; 0 on the background.
        mask: (H, W) bool, pixels that hit a surface.
        primitive_id: (H, W) int16 index of the surface hit (-1 none).
        primitive_names: name of each index: ``'figure'``, ``'floor'``,
            ``'sphere'``, ``'box'`` or ``'wall'``.
        cam_K: (3, 3) float64 intrinsics.
        cam_extrinsics: (4, 4) float64 world-to-camera matrix.
        normal_convention: name in :data:`NORMAL_CONVENTIONS`.
    """

    image: np.ndarray
    albedo: np.ndarray
    normal: np.ndarray
    depth: np.ndarray
    mask: np.ndarray
    primitive_id: np.ndarray
    primitive_names: Tuple[str, ...]
    cam_K: np.ndarray
    cam_extrinsics: np.ndarray
    normal_convention: str = 'opencv'


# ---------------------------------------------------------------- primitives
# Each intersector takes rays ``d`` (N, 3) from the camera centre (origin)
# with d_z = 1, so the hit parameter t equals the depth Z, and returns
# (t (N,), normal (N, 3)); t = inf where the ray misses.

def _sphere_hit(d: np.ndarray, centre: np.ndarray, radius: float):
    a = np.einsum('ij,ij->i', d, d)
    b = d @ centre
    c = centre @ centre - radius * radius
    disc = b * b - a * c
    t = (b - np.sqrt(np.maximum(disc, 0.0))) / a
    t = np.where((disc >= 0) & (t > 0), t, np.inf)
    normal = (t[:, None] * d - centre) / radius
    return t, normal


def _capsule_hit(d: np.ndarray, a: np.ndarray, b: np.ndarray, radius: float):
    axis = b - a
    length = np.linalg.norm(axis)
    axis = axis / length
    # Infinite cylinder around the axis, kept where the hit lies on the body.
    d_perp = d - np.outer(d @ axis, axis)
    o_perp = -a - (-a @ axis) * axis
    qa = np.einsum('ij,ij->i', d_perp, d_perp)
    qb = d_perp @ o_perp
    qc = o_perp @ o_perp - radius * radius
    disc = qb * qb - qa * qc
    with np.errstate(divide='ignore', invalid='ignore'):
        t_body = (-qb - np.sqrt(np.maximum(disc, 0.0))) / qa
    s = (t_body[:, None] * d - a) @ axis
    t_body = np.where((disc >= 0) & (t_body > 0) & (s >= 0) & (s <= length),
                      t_body, np.inf)
    t_a, _ = _sphere_hit(d, a, radius)
    t_b, _ = _sphere_hit(d, b, radius)
    t = np.minimum(t_body, np.minimum(t_a, t_b))
    # The normal points from the closest point of the segment to the hit.
    p = np.where(np.isfinite(t)[:, None], t[:, None] * d, 0.0)
    s = np.clip((p - a) @ axis, 0.0, length)
    normal = (p - (a + s[:, None] * axis)) / radius
    return t, normal


def _box_hit(d: np.ndarray, centre: np.ndarray, rot: np.ndarray,
             half: np.ndarray):
    """Oriented box: ``rot`` columns are the box axes in the camera frame."""
    o_l = rot.T @ (-centre)
    d_l = d @ rot
    with np.errstate(divide='ignore', invalid='ignore'):
        t1 = (-half - o_l) / d_l
        t2 = (half - o_l) / d_l
    t_near = np.minimum(t1, t2)
    t_far = np.maximum(t1, t2)
    t_near = np.where(np.isnan(t_near), -np.inf, t_near)
    t_far = np.where(np.isnan(t_far), np.inf, t_far)
    t_enter = t_near.max(axis=1)
    t_exit = t_far.min(axis=1)
    hit = (t_exit >= t_enter) & (t_enter > 0)
    face = t_near.argmax(axis=1)
    n_l = np.zeros_like(d)
    n_l[np.arange(len(d)), face] = -np.sign(d_l[np.arange(len(d)), face])
    return np.where(hit, t_enter, np.inf), n_l @ rot.T


def _rect_hit(d: np.ndarray, centre: np.ndarray, normal: np.ndarray,
              u_axis: np.ndarray, v_axis: np.ndarray, half_u: float,
              half_v: float):
    denom = d @ normal
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (centre @ normal) / denom
    p = t[:, None] * d - centre
    inside = (np.abs(p @ u_axis) <= half_u) & (np.abs(p @ v_axis) <= half_v)
    t = np.where((np.abs(denom) > _EPS) & (t > 0) & inside, t, np.inf)
    return t, np.broadcast_to(normal, d.shape)


# ------------------------------------------------------------------ textures
# Each texture maps world points (N, 3) to sRGB albedo (N, 3) in [0, 1].

def _checker(c1, c2, size) -> Callable[[np.ndarray], np.ndarray]:
    c1, c2 = np.asarray(c1), np.asarray(c2)

    def fn(p):
        # Rounded first: the floor's world z is 0 up to BLAS rounding
        # (+-1e-16, which differs between CPUs' kernels), and flooring that
        # noise flipped the parity of the whole floor on some machines.
        scaled = np.round(p / size, 9)
        cell = np.floor(scaled).astype(np.int64).sum(axis=1) % 2
        return np.where(cell[:, None] == 0, c1, c2)
    return fn


def _stripes(c1, c2, direction, period) -> Callable[[np.ndarray], np.ndarray]:
    c1, c2 = np.asarray(c1), np.asarray(c2)
    direction = np.asarray(direction) / np.linalg.norm(direction)

    def fn(p):
        w = 0.5 + 0.5 * np.sin(2 * np.pi * (p @ direction) / period)
        return c1 * w[:, None] + c2 * (1 - w[:, None])
    return fn


def _random_color(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.15, 0.9, size=3)


def _random_texture(rng: np.random.Generator):
    c1, c2 = _random_color(rng), _random_color(rng)
    if rng.random() < 0.5:
        return _checker(c1, c2, rng.uniform(0.08, 0.3))
    return _stripes(c1, c2, rng.normal(size=3), rng.uniform(0.05, 0.3))


# --------------------------------------------------------------------- scene

def _look_at(cam_pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """World-to-camera 4x4 (OpenCV axes) for a camera at ``cam_pos``."""
    forward = target - cam_pos
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.array([0.0, 0.0, 1.0]))
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rot = np.stack([right, down, forward])
    ext = np.eye(4)
    ext[:3, :3] = rot
    ext[:3, 3] = -rot @ cam_pos
    return ext


def _figure_parts(rng: np.random.Generator, yaw: float):
    """Capsules and a head sphere of a standing person about 1.75 m tall."""
    cos, sin = np.cos(yaw), np.sin(yaw)
    rot = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])

    def world(x, y, z):
        return rot @ np.array([x, y, z])

    arm = rng.uniform(-0.25, 0.35, size=2)   # how far each arm swings out
    step = rng.uniform(-0.12, 0.12)
    parts = []
    for side, swing in ((-1, arm[0]), (1, arm[1])):
        hip = world(0.1 * side, 0.0, 0.9)
        knee = world(0.11 * side, side * step, 0.5)
        ankle = world(0.12 * side, side * step * 1.5, 0.09)
        shoulder = world(0.22 * side, 0.0, 1.42)
        elbow = world((0.28 + 0.2 * swing) * side, 0.05, 1.16 + 0.1 * swing)
        wrist = world((0.31 + 0.4 * swing) * side, 0.1, 0.92 + 0.25 * swing)
        parts += [('capsule', (hip, knee, 0.075)),
                  ('capsule', (knee, ankle, 0.06)),
                  ('capsule', (shoulder, elbow, 0.05)),
                  ('capsule', (elbow, wrist, 0.045))]
    parts.append(('capsule', (world(0, 0, 1.0), world(0, 0, 1.38), 0.17)))
    parts.append(('capsule', (world(0, 0, 1.45), world(0, 0, 1.52), 0.05)))
    parts.append(('sphere', (world(0, 0, 1.63), 0.11)))
    return parts


def _scene_primitives(rng: np.random.Generator):
    """World-frame primitives: (name, kind, params, texture)."""
    prims = []
    clothes = [_random_texture(rng) for _ in range(3)]
    skin = _stripes(rng.uniform(0.5, 0.85, 3), rng.uniform(0.4, 0.8, 3),
                    (0, 0, 1), 0.4)
    for i, (kind, params) in enumerate(_figure_parts(rng,
                                                     rng.uniform(-0.6, 0.6))):
        texture = skin if kind == 'sphere' else clothes[i % 3]
        prims.append(('figure', kind, params, texture))
    floor_c1, floor_c2 = _random_color(rng), _random_color(rng)
    floor = (np.zeros(3), np.array([0., 0., 1.]), np.array([1., 0., 0.]),
             np.array([0., 1., 0.]), 2.0, 2.0)
    prims.append(('floor', 'rect', floor,
                  _checker(floor_c1, floor_c2, 0.25)))
    for _ in range(rng.integers(1, 4)):
        radius = rng.uniform(0.12, 0.3)
        ang, dist = rng.uniform(0, 2 * np.pi), rng.uniform(0.6, 1.6)
        centre = np.array([dist * np.cos(ang), dist * np.sin(ang), radius])
        prims.append(('sphere', 'sphere', (centre, radius),
                      _random_texture(rng)))
    for _ in range(rng.integers(1, 3)):
        half = rng.uniform(0.1, 0.3, size=3)
        ang, dist = rng.uniform(0, 2 * np.pi), rng.uniform(0.7, 1.7)
        yaw = rng.uniform(0, np.pi)
        rot = np.array([[np.cos(yaw), -np.sin(yaw), 0],
                        [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1.0]])
        centre = np.array([dist * np.cos(ang), dist * np.sin(ang), half[2]])
        prims.append(('box', 'box', (centre, rot, half),
                      _random_texture(rng)))
    if rng.random() < 0.5:
        wall = (np.array([0.0, -1.8, 1.0]), np.array([0., 1., 0.]),
                np.array([1., 0., 0.]), np.array([0., 0., 1.]), 1.8, 1.0)
        prims.append(('wall', 'rect', wall, _random_texture(rng)))
    return prims


def _to_camera(kind: str, params: tuple, ext: np.ndarray) -> tuple:
    rot, trans = ext[:3, :3], ext[:3, 3]

    def pt(p):
        return rot @ p + trans
    if kind == 'sphere':
        return (pt(params[0]), params[1])
    if kind == 'capsule':
        return (pt(params[0]), pt(params[1]), params[2])
    if kind == 'box':
        return (pt(params[0]), rot @ params[1], params[2])
    centre, normal, u_axis, v_axis, hu, hv = params
    return (pt(centre), rot @ normal, rot @ u_axis, rot @ v_axis, hu, hv)


def _bounding_sphere(kind: str, params: tuple) -> Tuple[np.ndarray, float]:
    """Camera-frame (centre, radius) enclosing a primitive."""
    if kind == 'sphere':
        return params[0], params[1]
    if kind == 'capsule':
        a, b, radius = params
        return (a + b) / 2, np.linalg.norm(b - a) / 2 + radius
    if kind == 'box':
        return params[0], float(np.linalg.norm(params[2]))
    return params[0], float(np.hypot(params[4], params[5]))


def _pixel_box(sphere: Tuple[np.ndarray, float], cam_K: np.ndarray,
               height: int, width: int) -> Tuple[int, int, int, int]:
    """Conservative pixel rectangle (u0, u1, v0, v1) a sphere projects into;
    the whole image when the sphere reaches behind the camera."""
    (x, y, z), r = sphere
    if z - r <= 1e-6:
        return 0, width, 0, height
    box = []
    for coord, f, c, size in ((x, cam_K[0, 0], cam_K[0, 2], width),
                              (y, cam_K[1, 1], cam_K[1, 2], height)):
        ratios = [(coord + s * r) / (z + q * r) for s in (-1, 1)
                  for q in (-1, 1)]
        lo = int(np.floor(c + f * min(ratios))) - 1
        hi = int(np.ceil(c + f * max(ratios))) + 2
        box += [min(max(lo, 0), size), min(max(hi, 0), size)]
    return tuple(box)


_INTERSECTORS = dict(sphere=_sphere_hit, capsule=_capsule_hit, box=_box_hit,
                     rect=_rect_hit)


def _srgb_to_linear(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x,
                    1.055 * np.power(x, 1 / 2.4) - 0.055)


def _render_once(rng: np.random.Generator, height: int, width: int,
                 normal_convention: str) -> SyntheticScene:
    vfov = np.deg2rad(rng.uniform(45.0, 65.0))
    focal = height / (2.0 * np.tan(vfov / 2))
    cx = (width - 1) / 2 + rng.uniform(-0.03, 0.03) * width
    cy = (height - 1) / 2 + rng.uniform(-0.03, 0.03) * height
    cam_K = np.array([[focal, 0, cx], [0, focal, cy], [0, 0, 1.0]])
    azimuth = -np.pi / 2 + rng.uniform(-0.7, 0.7)   # in front of the figure
    dist = rng.uniform(2.6, 4.0)
    cam_pos = np.array([dist * np.cos(azimuth), dist * np.sin(azimuth),
                        rng.uniform(0.9, 1.6)])
    target = np.array([rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1),
                       rng.uniform(0.75, 1.0)])
    ext = _look_at(cam_pos, target)

    v, u = np.mgrid[0:height, 0:width].astype(np.float64)
    rays = np.stack([(u - cx) / focal, (v - cy) / focal, np.ones_like(u)],
                    axis=-1).reshape(-1, 3)
    n_rays = rays.shape[0]
    best_t = np.full(n_rays, np.inf)
    best_n = np.zeros((n_rays, 3))
    best_id = np.full(n_rays, -1, dtype=np.int16)
    pixel_index = np.arange(n_rays).reshape(height, width)
    prims = _scene_primitives(rng)
    for idx, (_, kind, params, _) in enumerate(prims):
        cam_params = _to_camera(kind, params, ext)
        # Only the rays inside the primitive's projected bounding box.
        u0, u1, v0, v1 = _pixel_box(_bounding_sphere(kind, cam_params),
                                    cam_K, height, width)
        if u0 >= u1 or v0 >= v1:
            continue
        sel = pixel_index[v0:v1, u0:u1].reshape(-1)
        t, n = _INTERSECTORS[kind](rays[sel], *cam_params)
        closer = t < best_t[sel]
        best_t[sel[closer]] = t[closer]
        best_n[sel[closer]] = n[closer]
        best_id[sel[closer]] = idx
    mask = np.isfinite(best_t)
    # Orient every normal toward the camera (double-sided rectangles).
    facing = np.einsum('ij,ij->i', best_n, rays)
    best_n = np.where(facing[:, None] > 0, -best_n, best_n)
    best_n /= np.maximum(np.linalg.norm(best_n, axis=1, keepdims=True), _EPS)
    best_n[~mask] = 0.0

    p_cam = np.where(mask[:, None], best_t[:, None] * rays, 0.0)
    p_world = (p_cam - ext[:3, 3]) @ ext[:3, :3]
    albedo = np.zeros((n_rays, 3))
    for idx, (_, _, _, texture) in enumerate(prims):
        sel = best_id == idx
        if sel.any():
            albedo[sel] = texture(p_world[sel])
    albedo = np.round(np.clip(albedo, 0, 1) * 255) / 255

    light_world = np.array([rng.uniform(-0.6, 0.6), rng.uniform(-1.0, -0.2),
                            1.0])
    light = ext[:3, :3] @ (light_world / np.linalg.norm(light_world))
    ambient = rng.uniform(0.2, 0.35)
    shade = ambient + (1 - ambient) * np.maximum(best_n @ light, 0.0)
    radiance = _srgb_to_linear(albedo) * shade[:, None] * rng.uniform(0.9,
                                                                       1.3)
    sky = np.array([0.55, 0.7, 0.9]) * (0.6 + 0.4 * (v.reshape(-1, 1)
                                                    / height))
    color = np.where(mask[:, None], _linear_to_srgb(radiance), sky)
    image = np.round(color * 255).astype(np.uint8)

    signs = np.asarray(NORMAL_CONVENTIONS[normal_convention])
    return SyntheticScene(
        image=image.reshape(height, width, 3),
        albedo=np.where(mask[:, None], albedo, 0).reshape(
            height, width, 3).astype(np.float32),
        normal=(best_n * signs).reshape(height, width, 3).astype(np.float32),
        depth=np.where(mask, best_t, 0.0).reshape(height,
                                                  width).astype(np.float32),
        mask=mask.reshape(height, width),
        primitive_id=best_id.reshape(height, width),
        primitive_names=tuple(p[0] for p in prims),
        cam_K=cam_K, cam_extrinsics=ext,
        normal_convention=normal_convention)


def passes_official_filters(scene: SyntheticScene,
                            filters: Optional[dict] = None) -> bool:
    """Whether a scene passes the official training drop filters.

    Mask of at least 16 pixels and at most 96 % of the image, minimum valid
    canonical depth (Z * 768 / fx) of 0.04, and an albedo whose largest
    per-channel standard deviation over the mask is at least 0.02.
    """
    f = dict(OFFICIAL_FILTERS, **(filters or {}))
    count = int(scene.mask.sum())
    if count < f['min_mask_pixels'] or count > f['max_mask_ratio'] * \
            scene.mask.size:
        return False
    canonical = scene.depth[scene.mask] * f['canonical_focal_length'] / \
        scene.cam_K[0, 0]
    if canonical.min() < f['min_canonical_depth']:
        return False
    return float(scene.albedo[scene.mask].std(axis=0).max()) >= \
        f['min_albedo_std']


def scene_seed(seed: int, index: int) -> np.random.SeedSequence:
    """The seed of scene ``index`` of a dataset generated with ``seed``.

    numpy's ``SeedSequence(seed, spawn_key=(index,))`` (what
    ``SeedSequence(seed).spawn(n)[index]`` gives): scenes of one seed, and of
    different seeds, draw from independent streams. (``seed + index`` made
    scene 0 of seed 1 equal scene 1 of seed 0, so train and val sets made
    with consecutive seeds shared scenes.)

    Raises:
        ValueError: a negative ``seed`` or ``index``.
    """
    if seed < 0 or index < 0:
        raise ValueError(f'seed and scene index must be >= 0, got seed '
                         f'{seed}, index {index}.')
    return np.random.SeedSequence(seed, spawn_key=(index, ))


def render_scene(seed: Union[int, np.random.SeedSequence],
                 height: int = 256, width: int = 192,
                 normal_convention: str = 'opencv',
                 max_attempts: int = 20) -> SyntheticScene:
    """Render one scene, deterministic from ``seed``.

    A draw that fails :func:`passes_official_filters` is redrawn from the
    same seeded stream (so the result stays deterministic).

    Args:
        seed: random seed of the scene (an int, or a
            :func:`scene_seed` of a generated dataset).
        height: image height in pixels.
        width: image width in pixels.
        normal_convention: a key of :data:`NORMAL_CONVENTIONS`.
        max_attempts: draws before giving up.

    Returns:
        The :class:`SyntheticScene`.
    """
    if normal_convention not in NORMAL_CONVENTIONS:
        raise ValueError(
            f'normal_convention={normal_convention!r} is not one of '
            f'{sorted(NORMAL_CONVENTIONS)}.')
    if height < 8 or width < 8:
        raise ValueError(f'Image size {height}x{width} is too small; use at '
                         'least 8x8.')
    rng = np.random.default_rng(seed)
    for _ in range(max_attempts):
        scene = _render_once(rng, height, width, normal_convention)
        if passes_official_filters(scene):
            return scene
    raise RuntimeError(
        f'No scene for seed {seed} at {height}x{width} passed the official '
        f'filters in {max_attempts} draws; try a larger image.')


#: Sub-folder per written quantity (the layouts the dense datasets read).
FOLDERS = dict(rgb='rgb', mask='mask', normal='normal', depth='depth',
               cam_K='camera_intrinsics', cam_extrinsics='camera_extrinsics',
               albedo='albedo')

#: Which folders each task needs.
TASK_FOLDERS = dict(normal=('rgb', 'mask', 'normal'),
                    pointmap=('rgb', 'mask', 'depth', 'cam_K',
                              'cam_extrinsics'),
                    albedo=('rgb', 'mask', 'albedo'))


def _scene_files(name: str, folders: Sequence[str], image_format: str,
                 normal_format: str) -> Dict[str, str]:
    ext = dict(rgb=image_format, mask='.png', normal=normal_format,
               depth='.npy', cam_K='.txt', cam_extrinsics='.txt',
               albedo='.png')
    return {key: osp.join(FOLDERS[key], name + ext[key]) for key in folders}


def write_scene(scene: SyntheticScene, out_dir: str, name: str,
                tasks: Sequence[str] = ('normal', 'pointmap', 'albedo'),
                image_format: str = '.png',
                normal_format: str = '.npy') -> List[str]:
    """Write one scene in the folder layouts of ``tasks`` under ``out_dir``.

    Files: ``rgb/<name>.png|.jpg`` (BGR on disk as cv2 writes it),
    ``mask/<name>.png`` (0/255), ``normal/<name>.npy`` (or ``.npz`` with key
    ``normal``), ``depth/<name>.npy`` (metric, float32),
    ``camera_intrinsics/<name>.txt`` (3x3), ``camera_extrinsics/<name>.txt``
    (4x4 world-to-camera), ``albedo/<name>.png`` (sRGB). Existing files are
    never overwritten: a ``FileExistsError`` names the first one.

    Returns:
        The written paths.
    """
    unknown = set(tasks) - set(TASK_FOLDERS)
    if unknown:
        raise ValueError(f'Unknown tasks {sorted(unknown)}; expected some of '
                         f'{sorted(TASK_FOLDERS)}.')
    if image_format not in ('.png', '.jpg'):
        raise ValueError(f'image_format must be .png or .jpg, got '
                         f'{image_format!r}.')
    if normal_format not in ('.npy', '.npz'):
        raise ValueError(f'normal_format must be .npy or .npz, got '
                         f'{normal_format!r}.')
    folders = [k for k in FOLDERS if any(k in TASK_FOLDERS[t] for t in tasks)]
    files = _scene_files(name, folders, image_format, normal_format)
    paths = {k: osp.join(out_dir, rel) for k, rel in files.items()}
    for path in paths.values():
        if osp.exists(path):
            raise FileExistsError(
                f'{path} already exists; write to an empty folder (existing '
                'outputs are never overwritten).')
    for path in paths.values():
        os.makedirs(osp.dirname(path), exist_ok=True)
    writers = dict(
        rgb=lambda p: cv2.imwrite(p, scene.image[..., ::-1]),
        mask=lambda p: cv2.imwrite(p, scene.mask.astype(np.uint8) * 255),
        depth=lambda p: np.save(p, scene.depth),
        cam_K=lambda p: np.savetxt(p, scene.cam_K, fmt='%.10f'),
        cam_extrinsics=lambda p: np.savetxt(p, scene.cam_extrinsics,
                                            fmt='%.10f'),
        albedo=lambda p: cv2.imwrite(
            p, np.round(scene.albedo[..., ::-1] * 255).astype(np.uint8)))
    for key, path in paths.items():
        if key == 'normal':
            if normal_format == '.npz':
                np.savez_compressed(path, normal=scene.normal)
            else:
                np.save(path, scene.normal)
        else:
            writers[key](path)
    return list(paths.values())


def generate_dataset(out_dir: str, num_scenes: int, height: int = 256,
                     width: int = 192, seed: int = 0,
                     tasks: Sequence[str] = ('normal', 'pointmap', 'albedo'),
                     normal_convention: str = 'opencv',
                     image_format: str = '.png',
                     normal_format: str = '.npy') -> List[str]:
    """Render ``num_scenes`` scenes (scene ``i`` from
    :func:`scene_seed` ``(seed, i)``) and write them with
    :func:`write_scene` as ``scene_00000`` ....

    Returns:
        The scene names.
    """
    names = []
    for i in range(num_scenes):
        name = f'scene_{i:05d}'
        scene = render_scene(scene_seed(seed, i), height, width,
                             normal_convention)
        write_scene(scene, out_dir, name, tasks, image_format, normal_format)
        names.append(name)
    return names
