"""Procedural dense scenes: exact geometry, conventions, files, filters."""
import os.path as osp

import cv2
import numpy as np
import pytest
from synthetic_dense import (
    NORMAL_CONVENTIONS,
    generate_dataset,
    passes_official_filters,
    render_scene,
    write_scene,
)

from tests.conftest import DATA_DIR

SAMPLE = osp.join(DATA_DIR, 'dense_sample')


def backproject(depth, K):
    """(H, W, 3) camera points from Z depth, written out independently."""
    h, w = depth.shape
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    x = (u - K[0, 2]) / K[0, 0] * depth
    y = (v - K[1, 2]) / K[1, 1] * depth
    return np.stack([x, y, depth.astype(np.float64)], axis=-1)


def normals_from_depth(depth, K):
    """Central-difference normals pointing toward the camera, and the
    interior pixels where they are defined."""
    p = backproject(depth, K)
    dx = np.zeros_like(p)
    dy = np.zeros_like(p)
    dx[:, 1:-1] = p[:, 2:] - p[:, :-2]
    dy[1:-1] = p[2:] - p[:-2]
    n = -np.cross(dx, dy)  # cross(right, down) points away from the camera
    norm = np.linalg.norm(n, axis=-1, keepdims=True)
    return n / np.maximum(norm, 1e-12)


def smooth_interior(scene):
    """Pixels whose 5x5 neighbourhood hits the same surface and has no
    crease (box edges): central differences are defined there."""
    ids = scene.primitive_id.astype(np.int32)
    kernel = np.ones((5, 5), np.uint8)
    same = np.ones(ids.shape, bool)
    for i in np.unique(ids[ids >= 0]):
        region = (ids == i).astype(np.uint8)
        same &= ~((cv2.dilate(region, kernel) > 0) & (cv2.erode(
            region, kernel) == 0))
    n = scene.normal
    crease = np.zeros(ids.shape, bool)
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        shifted = np.roll(n, (dy, dx), axis=(0, 1))
        crease |= np.sum(n * shifted, axis=-1) < np.cos(np.radians(30))
    crease = cv2.dilate(crease.astype(np.uint8), kernel) > 0
    inside = np.zeros(ids.shape, bool)
    inside[2:-2, 2:-2] = True
    return scene.mask & same & ~crease & inside & (cv2.erode(
        scene.mask.astype(np.uint8), kernel) > 0)


def angles_deg(a, b):
    cos = np.clip(np.sum(a * b, axis=-1), -1, 1)
    return np.degrees(np.arccos(cos))


@pytest.mark.parametrize('seed', [0, 7])
def test_normals_equal_normals_derived_from_depth(seed):
    scene = render_scene(seed, 256, 192)
    interior = smooth_interior(scene)
    assert interior.sum() > 5000
    err = angles_deg(scene.normal, normals_from_depth(scene.depth,
                                                      scene.cam_K))[interior]
    assert np.median(err) < 0.1
    assert np.percentile(err, 99) < 1.0
    assert err.max() < 5.0
    # The comparison can fail: the same normals in the OpenGL axes (y and z
    # flipped) are far off.
    wrong = scene.normal * np.array([1, -1, -1], np.float32)
    bad = angles_deg(wrong, normals_from_depth(scene.depth,
                                               scene.cam_K))[interior]
    assert np.median(bad) > 90


def test_scene_is_deterministic_and_seed_dependent():
    a, b, c = render_scene(3, 64, 48), render_scene(3, 64, 48), \
        render_scene(4, 64, 48)
    for key in ('image', 'albedo', 'normal', 'depth', 'mask', 'cam_K',
                'cam_extrinsics'):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    assert not np.array_equal(a.depth, c.depth)


def test_scene_fields_are_consistent():
    scene = render_scene(1, 128, 96)
    m = scene.mask
    np.testing.assert_allclose(np.linalg.norm(scene.normal[m], axis=-1), 1,
                               atol=1e-5)
    assert (scene.depth[m] > 0).all() and (scene.depth[~m] == 0).all()
    assert (scene.normal[~m] == 0).all() and (scene.albedo[~m] == 0).all()
    # Albedo is stored exactly by an 8-bit PNG.
    np.testing.assert_array_equal(np.round(scene.albedo * 255) / 255,
                                  scene.albedo)
    # OpenCV toward-camera normals face the viewing ray.
    rays = backproject(np.ones_like(scene.depth), scene.cam_K)
    assert (np.sum(scene.normal * rays, axis=-1)[m] < 0).all()
    assert 0.05 < m.mean() < 0.96
    assert passes_official_filters(scene)


def test_normal_conventions():
    base = render_scene(2, 64, 48)
    away = render_scene(2, 64, 48, normal_convention='opencv_away')
    opengl = render_scene(2, 64, 48, normal_convention='opengl')
    np.testing.assert_array_equal(away.normal, -base.normal)
    np.testing.assert_array_equal(opengl.normal,
                                  base.normal * np.array([1, -1, -1]))
    # Toward the camera in the OpenGL frame too (rays there are (x, -y, -z)).
    rays = backproject(np.ones_like(base.depth), base.cam_K) * [1, -1, -1]
    assert (np.sum(opengl.normal * rays, axis=-1)[base.mask] < 0).all()
    assert set(NORMAL_CONVENTIONS) == {'opencv', 'opencv_away', 'opengl'}
    with pytest.raises(ValueError, match='normal_convention'):
        render_scene(0, 64, 48, normal_convention='metric3d')


def test_filters_reject_degenerate_scenes():
    scene = render_scene(0, 64, 48)
    full = render_scene(0, 64, 48)
    full.mask = np.ones_like(full.mask)
    full.depth = np.where(full.depth > 0, full.depth, 5.0)
    assert passes_official_filters(scene)
    assert not passes_official_filters(full)  # mask > 96 % of the image
    flat = render_scene(0, 64, 48)
    flat.albedo = np.full_like(flat.albedo, 0.5)
    assert not passes_official_filters(flat)  # albedo std < 0.02
    near = render_scene(0, 64, 48)
    near.depth = near.depth * 1e-3  # canonical depth < 0.04
    assert not passes_official_filters(near)


SCENE_FILES = ('img', 'mask', 'normal', 'depth', 'K', 'M', 'albedo')


def _read_scene_files(root, name, normal_ext):
    img = cv2.imread(osp.join(root, 'rgb', name + '.png'))[..., ::-1]
    mask = cv2.imread(osp.join(root, 'mask', name + '.png'))[..., 0] > 0
    normal = np.load(osp.join(root, 'normal', name + normal_ext))
    if normal_ext == '.npz':
        normal = normal['normal']
    depth = np.load(osp.join(root, 'depth', name + '.npy'))
    K = np.loadtxt(osp.join(root, 'camera_intrinsics', name + '.txt'))
    M = np.loadtxt(osp.join(root, 'camera_extrinsics', name + '.txt'))
    albedo = cv2.imread(osp.join(root, 'albedo', name + '.png'))[..., ::-1]
    return img, mask, normal, depth, K, M, albedo


def test_files_round_trip_and_floor_lies_at_world_z0(tmp_path):
    scene = render_scene(5, 128, 96)
    write_scene(scene, str(tmp_path), 'a', normal_format='.npz')
    img, mask, normal, depth, K, M, albedo = _read_scene_files(
        str(tmp_path), 'a', '.npz')
    np.testing.assert_array_equal(img, scene.image)
    np.testing.assert_array_equal(mask, scene.mask)
    np.testing.assert_array_equal(normal, scene.normal)
    np.testing.assert_array_equal(depth, scene.depth)
    np.testing.assert_allclose(K, scene.cam_K, atol=1e-9)
    np.testing.assert_allclose(M, scene.cam_extrinsics, atol=1e-9)
    np.testing.assert_allclose(albedo / 255.0, scene.albedo, atol=1e-7)
    # Depth + intrinsics + extrinsics from the files put the floor at z=0
    # and nothing below it (all objects rest on the floor).
    cam = backproject(depth, K)
    world = (cam - M[:3, 3]) @ M[:3, :3]
    floor = scene.primitive_id == scene.primitive_names.index('floor')
    assert floor.sum() > 100
    np.testing.assert_allclose(world[floor, 2], 0, atol=1e-4)
    assert world[mask, 2].min() > -1e-4
    # The head (the figure's last part, a sphere of radius 0.11 around
    # z = 1.63) tops the figure at 1.74 m.
    head = len(scene.primitive_names) - 1 - \
        scene.primitive_names[::-1].index('figure')
    head_z = world[scene.primitive_id == head, 2]
    assert head_z.size > 20 and 1.5 < head_z.min() and head_z.max() < 1.7401
    with pytest.raises(FileExistsError, match='never overwritten'):
        write_scene(scene, str(tmp_path), 'a', normal_format='.npz')


def test_generate_dataset_layouts_and_formats(tmp_path):
    names = generate_dataset(str(tmp_path), 2, 64, 48, seed=11,
                             tasks=('normal',), image_format='.jpg')
    assert names == ['scene_00000', 'scene_00001']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mask', 'normal',
                                                           'rgb']
    assert (tmp_path / 'rgb' / 'scene_00001.jpg').is_file()
    assert (tmp_path / 'normal' / 'scene_00000.npy').is_file()
    with pytest.raises(ValueError, match='Unknown tasks'):
        generate_dataset(str(tmp_path / 'x'), 1, 64, 48, tasks=('depth',))


def test_bundled_sample_matches_the_generator(tmp_path):
    """tests/data/dense_sample is what its README command writes.

    The generator is float64 geometry (ray hits, BLAS products) whose last
    bits differ between CPUs: on an Intel CPU one normal of 147,456 came
    out 2.3e-13 away from the AMD-made sample. So the float maps and the
    camera files are compared to float32 rounding (rtol 1e-6; atol 1e-9
    for values that cancel to about 0), and the 8-bit image and albedo,
    which round such floats to 1/255 steps, may move by one step on at
    most 0.1 % of their values (a float landing on a .5 boundary). The
    mask is a hit / no-hit comparison and must be equal.
    """
    generate_dataset(str(tmp_path), 4, seed=0, normal_format='.npz')
    for i in range(4):
        name = f'scene_{i:05d}'
        ours = dict(zip(SCENE_FILES, _read_scene_files(SAMPLE, name, '.npz')))
        fresh = dict(
            zip(SCENE_FILES, _read_scene_files(str(tmp_path), name, '.npz')))
        np.testing.assert_array_equal(ours['mask'], fresh['mask'])
        for key in ('normal', 'depth', 'K', 'M'):
            np.testing.assert_allclose(
                fresh[key], ours[key], rtol=1e-6, atol=1e-9, err_msg=key)
        for key in ('img', 'albedo'):
            step = np.abs(fresh[key].astype(int) - ours[key].astype(int))
            assert step.max() <= 1, (key, step.max())
            assert np.count_nonzero(step) <= 1e-3 * step.size, key


def test_checker_ignores_rounding_noise_on_a_cell_boundary():
    """The floor lies at world z = 0 only up to BLAS rounding, whose sign
    differs between CPUs: the checker color must not depend on it."""
    from synthetic_dense import _checker
    c1, c2 = np.zeros(3), np.ones(3)
    texture = _checker(c1, c2, 0.25)
    xy = np.random.default_rng(0).uniform(-2, 2, size=(500, 2))
    colors = [texture(np.column_stack([xy, np.full(500, z)]))
               for z in (0.0, 3e-17, -3e-17, -1e-13)]
    for other in colors[1:]:
        np.testing.assert_array_equal(other, colors[0])
    # An exact check of the pattern: cells of 0.25 alternate along x.
    row = texture(np.array([[0.1, 0.1, 0.0], [0.3, 0.1, 0.0],
                            [-0.1, 0.1, 0.0]]))
    np.testing.assert_array_equal(row, [c1, c2, c2])


def test_datasets_of_different_seeds_share_no_scene(tmp_path):
    """Issue 18: scene i used seed + i, so --seed 1 scene 0 was --seed 0
    scene 1 (a val set from the next seed leaked into training). Scene i
    now comes from SeedSequence(seed, spawn_key=(i,))."""
    from synthetic_dense import scene_seed
    seq = np.random.SeedSequence(5)
    for i, child in enumerate(seq.spawn(3)):  # numpy's own spawning
        assert scene_seed(5, i).generate_state(4).tolist() == \
            child.generate_state(4).tolist()
    a = tmp_path / 'a'
    b = tmp_path / 'b'
    generate_dataset(str(a), 3, 64, 48, seed=0, tasks=('normal', ))
    generate_dataset(str(b), 3, 64, 48, seed=1, tasks=('normal', ))
    depth_a = [render_scene(scene_seed(0, i), 64, 48).depth for i in range(3)]
    rgb = {}
    for root in (a, b):
        for i in range(3):
            image = cv2.imread(str(root / 'rgb' / f'scene_{i:05d}.png'))
            rgb[(root.name, i)] = image
    for i in range(3):
        for j in range(3):
            assert not np.array_equal(rgb[('a', i)], rgb[('b', j)]), (i, j)
    # and not the first scenes of the other set either, in any order
    assert not any(np.array_equal(d, render_scene(scene_seed(1, 0), 64,
                                                  48).depth) for d in depth_a)
    with pytest.raises(ValueError, match='must be >= 0'):
        scene_seed(-1, 0)
