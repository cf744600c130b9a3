"""Dense datasets on the bundled synthetic sample; bad input."""
import os
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import Compose
from synthetic_dense import render_scene, write_scene

from sapiens2_mm.registry import DATASETS, TRANSFORMS
from tests.conftest import DATA_DIR, REPO_DIR
from tests.tiny_variants import DENSE_TASKS

SAMPLE = osp.join(DATA_DIR, 'dense_sample')
NAMES = [f'scene_{i:05d}' for i in range(4)]
LOAD = [dict(type='Sapiens2LoadImage'), dict(type='LoadDenseAnnotations')]


def _dataset(task, root=SAMPLE, pipeline=LOAD, **kwargs):
    return DATASETS.build(dict(type=f'{task.capitalize()}Dataset',
                               data_root=root, pipeline=list(pipeline),
                               **kwargs))


def _copy_sample(tmp_path):
    root = str(tmp_path / 'data')
    shutil.copytree(SAMPLE, root)
    return root


@pytest.mark.parametrize('task,keys', [
    ('normal', ('mask_path', 'normal_path')),
    ('pointmap', ('mask_path', 'depth_path', 'cam_K_path',
                  'cam_extrinsics_path')),
    ('albedo', ('mask_path', 'albedo_path')),
])
def test_datasets_pair_the_folders(task, keys):
    dataset = _dataset(task, pipeline=[])
    assert len(dataset) == 4 and dataset.metainfo['task'] == task
    info = dataset.get_data_info(2)
    assert info['img_path'] == osp.join(SAMPLE, 'rgb', NAMES[2] + '.png')
    for key in keys:
        assert osp.basename(info[key]).startswith(NAMES[2])
        assert osp.isfile(info[key])


def test_loaded_sample_has_consistent_geometry():
    """The bundled files: unit normals that agree with the normals of the
    back-projected depth (independent finite differences)."""
    normal = _dataset('normal')[0]
    point = _dataset('pointmap')[0]
    n, mask = normal['gt_normal'], normal['gt_mask']
    np.testing.assert_array_equal(mask, point['gt_mask'])
    np.testing.assert_allclose(np.linalg.norm(n[mask], axis=-1), 1, atol=1e-5)
    K, depth = point['cam_K'], point['gt_depth']
    v, u = np.mgrid[0:depth.shape[0], 0:depth.shape[1]]
    p = np.stack([(u - K[0, 2]) / K[0, 0] * depth,
                  (v - K[1, 2]) / K[1, 1] * depth, depth], -1)
    fd = -np.cross(p[1:-1, 2:] - p[1:-1, :-2], p[2:, 1:-1] - p[:-2, 1:-1])
    fd /= np.linalg.norm(fd, axis=-1, keepdims=True) + 1e-12
    cos = np.sum(fd * n[1:-1, 1:-1], -1)[mask[1:-1, 1:-1]]
    assert np.median(np.degrees(np.arccos(np.clip(cos, -1, 1)))) < 0.5
    assert point['cam_extrinsics'].shape == (4, 4)
    albedo = _dataset('albedo')[0]['gt_albedo']
    assert albedo.dtype == np.float32 and 0 <= albedo.min() <= albedo.max() <= 1


@pytest.mark.parametrize('task', DENSE_TASKS)
def test_config_pipelines_run_on_the_sample(task):
    cfg = Config.fromfile(osp.join(REPO_DIR, 'configs', '_base_', 'datasets',
                                   f'{task}-1024x768.py'))
    assert cfg.val_evaluator.type == f'{task.capitalize()}Metric'
    np.random.seed(0)
    train = _dataset(task, pipeline=cfg.train_pipeline)
    for i in range(len(train)):
        out = train[i]
        assert out['inputs'].shape == (3, 1024, 768)
        sample = out['data_samples']
        assert sample.gt_mask.data.shape == (1, 1024, 768)
    test = _dataset(task, pipeline=cfg.test_pipeline, test_mode=True)
    out = test[1]
    sample = out['data_samples']
    assert out['inputs'].shape == (3, 1024, 768)
    assert sample.gt_mask.shape == (256, 192)  # original size for scoring
    assert sample.padding_size == (0, 0, 0, 0) and sample.ori_shape == (256,
                                                                        192)
    if task == 'pointmap':
        # 256x192 -> 1024x768 is x4: canonical scale = 768 / (4 fx).
        fx = np.loadtxt(osp.join(SAMPLE, 'camera_intrinsics',
                                 NAMES[1] + '.txt'))[0, 0]
        assert sample.canonical_scale == pytest.approx(768 / (4 * fx))
        np.testing.assert_allclose(sample.cam_K[0, 0], 4 * fx, rtol=1e-6)
        np.testing.assert_allclose(sample.ori_cam_K[0, 0], fx, rtol=1e-6)


def test_jpg_images_are_accepted(tmp_path):
    root = _copy_sample(tmp_path)
    img = cv2.imread(osp.join(root, 'rgb', NAMES[0] + '.png'))
    cv2.imwrite(osp.join(root, 'rgb', NAMES[0] + '.jpg'), img)
    os.remove(osp.join(root, 'rgb', NAMES[0] + '.png'))
    dataset = _dataset('albedo', root)
    assert dataset.get_data_info(0)['img_path'].endswith('.jpg')
    assert dataset[0]['img'].shape == (256, 192, 3)


@pytest.mark.parametrize('folder,ext,what', [
    ('camera_intrinsics', '.txt', 'intrinsics'),
    ('camera_extrinsics', '.txt', 'extrinsics'),
    ('depth', '.npy', 'depth'),
])
def test_missing_target_files_are_named_or_skipped_and_counted(
        tmp_path, folder, ext, what):
    root = _copy_sample(tmp_path)
    missing = osp.join(root, folder, NAMES[1] + ext)
    os.remove(missing)
    with pytest.raises(FileNotFoundError) as err:
        _dataset('pointmap', root)
    assert missing in str(err.value) and 'skip_incomplete' in str(err.value)
    dataset = _dataset('pointmap', root, skip_incomplete=True)
    assert len(dataset) == 3
    assert dataset.skipped == {f'missing {what}': 1}
    assert all(NAMES[1] not in dataset.get_data_info(i)['img_path']
               for i in range(3))


def test_empty_or_missing_folders_are_named(tmp_path):
    root = tmp_path / 'empty'
    (root / 'rgb').mkdir(parents=True)
    (root / 'mask').mkdir()
    (root / 'normal').mkdir()
    with pytest.raises(FileNotFoundError, match='found no .*images in'):
        _dataset('normal', str(root))
    with pytest.raises(FileNotFoundError, match="albedo folder .*empty/albedo"):
        _dataset('albedo', str(root))
    with pytest.raises(FileNotFoundError, match='image folder'):
        _dataset('normal', str(tmp_path / 'nowhere'))


def test_two_files_of_one_name_are_refused(tmp_path):
    root = _copy_sample(tmp_path)
    shutil.copy(osp.join(root, 'rgb', NAMES[0] + '.png'),
                osp.join(root, 'rgb', NAMES[0] + '.jpg'))
    with pytest.raises(ValueError, match='keep one file per name'):
        _dataset('normal', root)


def _one_scene(tmp_path, **overrides):
    """A one-scene folder whose arrays can be replaced before writing."""
    scene = render_scene(0, 64, 48)
    for key, value in overrides.items():
        setattr(scene, key, value)
    root = str(tmp_path / 'one')
    write_scene(scene, root, 'a')
    return root, scene


def test_nan_inf_and_nonpositive_depth_leave_the_mask(tmp_path):
    scene = render_scene(0, 64, 48)
    depth = scene.depth.copy()
    ys, xs = np.nonzero(scene.mask)
    depth[ys[0], xs[0]] = np.nan
    depth[ys[1], xs[1]] = np.inf
    depth[ys[2], xs[2]] = -1.0
    depth[ys[3], xs[3]] = 0.0
    root, _ = _one_scene(tmp_path, depth=depth)
    out = _dataset('pointmap', root)[0]
    assert out['num_invalid_pixels'] == 4
    assert out['gt_mask'].sum() == scene.mask.sum() - 4
    assert np.isfinite(out['gt_depth']).all()
    assert (out['gt_depth'][out['gt_mask']] > 0).all()
    # The official rule masks only NaN.
    official = _dataset('pointmap', root, pipeline=[
        dict(type='Sapiens2LoadImage'),
        dict(type='LoadDenseAnnotations', depth_invalid='nan')])[0]
    assert official['num_invalid_pixels'] == 1
    # Through the target, the pointmap stays finite.
    target = TRANSFORMS.build(dict(type='PointmapGenerateTarget'))(out)
    assert np.isfinite(target['gt_pointmap']).all()


def test_all_invalid_depth_is_dropped_in_training_kept_at_test(tmp_path):
    root, _ = _one_scene(tmp_path, depth=np.full((64, 48), np.nan,
                                                 np.float32))
    pipeline = LOAD + [dict(type='PointmapGenerateTarget'),
                       dict(type='PackDenseInputs')]
    dataset = _dataset('pointmap', root, pipeline=pipeline, max_refetch=3)
    with pytest.raises(Exception, match='Cannot find valid'):
        dataset[0]  # the only sample is skipped on every draw
    pack = dataset.pipeline.transforms[-1]
    assert pack.skipped == {'mask has fewer than 16 pixels': 4}
    test = _dataset('pointmap', root, test_mode=True, pipeline=LOAD + [
        dict(type='PointmapGenerateTarget'),
        dict(type='PackDenseInputs', test_mode=True)])
    out = test[0]  # the sample itself, never another one
    assert out['data_samples'].img_path.endswith('a.png')
    assert not out['data_samples'].gt_mask.data.any()


def test_filtered_training_sample_is_skipped_not_replaced_by_index0(
        tmp_path):
    """Two scenes, the first degenerate: every returned sample is the
    valid one; the degenerate one is counted each time it is drawn."""
    root = str(tmp_path / 'two')
    bad = render_scene(0, 64, 48)
    bad.mask = np.zeros_like(bad.mask)
    write_scene(bad, root, 'a_bad')
    write_scene(render_scene(1, 64, 48), root, 'b_good')
    dataset = _dataset('albedo', root, pipeline=LOAD + [
        dict(type='PackDenseInputs')])
    np.random.seed(0)
    paths = {dataset[0]['data_samples'].img_path for _ in range(5)}
    assert paths == {osp.join(root, 'rgb', 'b_good.png')}
    # Each call first tries index 0 (the bad one), then random draws.
    assert sum(dataset.pipeline.transforms[-1].skipped.values()) >= 5


def test_normals_are_renormalized_zero_ones_masked_colors_refused(tmp_path):
    scene = render_scene(0, 64, 48)
    normal = scene.normal * 1.1  # slightly off unit length
    ys, xs = np.nonzero(scene.mask)
    normal[ys[0], xs[0]] = 0.0
    normal[ys[1], xs[1]] = np.nan
    root, _ = _one_scene(tmp_path, normal=normal)
    out = _dataset('normal', root)[0]
    m = out['gt_mask']
    assert m.sum() == scene.mask.sum() - 2 and out['num_invalid_pixels'] == 2
    np.testing.assert_allclose(np.linalg.norm(out['gt_normal'][m], axis=-1),
                               1, atol=1e-6)
    np.testing.assert_allclose(out['gt_normal'][m], scene.normal[m],
                               atol=1e-6)
    # Normals stored as colors (n + 1) / 2 are not silently rescaled.
    colors = np.where(scene.mask[..., None], (scene.normal + 1) / 2, 0)
    root2, _ = _one_scene(tmp_path / 'c', normal=colors.astype(np.float32))
    with pytest.raises(ValueError, match='not unit vectors.*2c - 1'):
        _dataset('normal', root2)[0]


def test_size_mismatches_name_the_file(tmp_path):
    root, _ = _one_scene(tmp_path)
    mask_path = osp.join(root, 'mask', 'a.png')
    cv2.imwrite(mask_path, np.zeros((32, 24), np.uint8))
    with pytest.raises(ValueError, match=r'mask/a.png is 32x24.*64x48'):
        _dataset('normal', root)[0]
    root2, _ = _one_scene(tmp_path / 'd')
    np.save(osp.join(root2, 'depth', 'a.npy'), np.ones((64, 40), np.float32))
    with pytest.raises(ValueError, match=r'depth/a.npy is 64x40'):
        _dataset('pointmap', root2)[0]
    root3, _ = _one_scene(tmp_path / 'n')
    np.save(osp.join(root3, 'normal', 'a.npy'), np.ones((64, 48), np.float32))
    with pytest.raises(ValueError, match=r'normal/a.npy have shape'):
        _dataset('normal', root3)[0]


@pytest.mark.parametrize('content,match', [
    ('1 0 0\n0 1 0\n', '2x3 matrix; expected 3x3'),
    ('0 0 10\n0 100 10\n0 0 1\n', 'not a pinhole matrix'),
    ('100 0 10\n0 100 nan\n0 0 1\n', 'non-finite'),
])
def test_bad_intrinsics_name_the_file(tmp_path, content, match):
    root, _ = _one_scene(tmp_path)
    path = osp.join(root, 'camera_intrinsics', 'a.txt')
    with open(path, 'w') as f:
        f.write(content)
    with pytest.raises(ValueError, match=match) as err:
        _dataset('pointmap', root)[0]
    assert path in str(err.value)


def test_bad_extrinsics_name_the_file(tmp_path):
    root, _ = _one_scene(tmp_path)
    path = osp.join(root, 'camera_extrinsics', 'a.txt')
    np.savetxt(path, np.ones((4, 4)))
    with pytest.raises(ValueError, match='last row') as err:
        _dataset('pointmap', root)[0]
    assert path in str(err.value)


def test_skip_bad_counts_instead_of_raising(tmp_path):
    root, _ = _one_scene(tmp_path)
    cv2.imwrite(osp.join(root, 'mask', 'a.png'), np.zeros((8, 8), np.uint8))
    load = Compose(LOAD[:1] + [dict(type='LoadDenseAnnotations',
                                     skip_bad=True)])
    dataset = _dataset('normal', root, pipeline=[])
    assert load(dataset.get_data_info(0)) is None
    assert load.transforms[1].skipped == {'bad file': 1}


def test_config_dataloaders_batch_dense_samples():
    """The base config's loaders (placeholder root swapped for the sample)
    build through mmengine and collate DenseDataSample lists."""
    from mmengine.runner import Runner
    cfg = Config.fromfile(osp.join(REPO_DIR, 'configs', '_base_', 'datasets',
                                   'pointmap-1024x768.py'))
    for name in ('train_dataloader', 'val_dataloader'):
        loader_cfg = cfg[name].copy()
        loader_cfg.update(batch_size=2, num_workers=0,
                          persistent_workers=False)
        loader_cfg.dataset.data_root = SAMPLE
        loader = Runner.build_dataloader(loader_cfg, seed=0)
        batch = next(iter(loader))
        assert len(batch['inputs']) == 2
        assert batch['inputs'][0].shape == (3, 1024, 768)
        assert [type(s).__name__ for s in batch['data_samples']] == \
            ['DenseDataSample'] * 2


@pytest.mark.parametrize('task', DENSE_TASKS)
def test_tta_pipeline_packs_a_plain_and_a_mirrored_view(task):
    cfg = Config.fromfile(osp.join(REPO_DIR, 'configs', '_base_', 'datasets',
                                   f'{task}-1024x768.py'))
    dataset = _dataset(task, pipeline=cfg.tta_pipeline, test_mode=True)
    out = dataset[0]
    plain, mirrored = out['inputs']
    assert torch.equal(mirrored, plain.flip(-1))
    s0, s1 = out['data_samples']
    assert (s0.flip, s1.flip) == (False, True)
    assert s1.flip_direction == 'horizontal'
    # The targets are the same original-size maps in both views.
    field = dict(normal='gt_normal', pointmap='gt_pointmap',
                 albedo='gt_albedo')[task]
    assert torch.equal(getattr(s0, field).data, getattr(s1, field).data)
    assert getattr(s0, field).shape == (256, 192)
    if task == 'pointmap':
        assert s0.canonical_scale == s1.canonical_scale
        assert s1.cam_K[0, 2] == pytest.approx(767 - s0.cam_K[0, 2])
