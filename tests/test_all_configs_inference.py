"""Every shipped config runs through the documented inference and test paths.

Each config in configs/ gets a tiny-architecture variant (tests/tiny_variants:
same pipeline, codec, input size, metric and task, a 2-block backbone) and is
run through ``sapiens2_mm.apis.init_model``, ``tools/infer.py`` on a bundled
photo and ``tools/test.py`` on one batch of the bundled sample data (COCO
photos with COCO-17 / WholeBody annotations, the WholeBody sample converted to
308 keypoints, the body-part seg sample, the synthetic dense scenes for
normal / pointmap / albedo). The pretraining configs are not inference models
and are listed, path by path, in ``tiny_variants.NOT_INFERENCE``.
"""
import os.path as osp

import cv2
import infer
import numpy as np
import pytest
import test as test_tool

from tests.conftest import PHOTO, REPO_DIR
from tests.tiny_variants import (
    DENSE_TASKS,
    INFERENCE,
    INFERENCE_TASKS,
    NOT_INFERENCE,
    SHIPPED,
    random_checkpoint,
    read_json,
    task_of,
    tiny_variant,
)


@pytest.fixture(scope='module', autouse=True)
def _environment_collected_once():
    """mmengine's Runner logs ``collect_env()`` (compiler / CUDA probes in
    subprocesses, ~4 s) on every construction; the environment does not
    change within this module, so its first answer is reused."""
    import functools

    import mmengine.runner.runner as runner_module
    patch = pytest.MonkeyPatch()
    patch.setattr(runner_module, 'collect_env',
                  functools.cache(runner_module.collect_env))
    yield
    patch.undo()


IDS = [osp.relpath(p, REPO_DIR) for p in INFERENCE]
SIZES = ('0.4b', '0.8b', '1b', '5b', 'tiny')
NUM_KEYPOINTS = {'coco': 17, 'coco-wholebody': 133, 'sapiens308': 308}


def expected_keypoints(config):
    name = osp.basename(config)
    for layout in ('coco-wholebody', 'sapiens308'):
        if layout in name:
            return NUM_KEYPOINTS[layout]
    return 17


def test_every_task_and_size_is_covered():
    assert {task_of(p) for p in INFERENCE} == set(INFERENCE_TASKS)
    for task in INFERENCE_TASKS:
        sizes = {s for p in INFERENCE if task_of(p) == task
                 for s in SIZES if f'sapiens2-{s}_' in osp.basename(p)}
        assert sizes == set(SIZES), (task, sizes)


def test_every_config_is_covered_or_excluded():
    """A shipped config is run here unless it is named in NOT_INFERENCE (and
    every name there is a shipped config that is not an inference model)."""
    from mmengine.config import Config

    from sapiens2_mm.apis import find_task
    shipped = {osp.relpath(p, REPO_DIR) for p in SHIPPED}
    assert set(NOT_INFERENCE) <= shipped, set(NOT_INFERENCE) - shipped
    assert shipped == set(IDS) | set(NOT_INFERENCE)
    for rel in NOT_INFERENCE:
        cfg = Config.fromfile(osp.join(REPO_DIR, rel))
        assert cfg.model.type == 'Sapiens2Pretrainer', rel
        with pytest.raises(ValueError, match='Sapiens2Pretrainer'):
            find_task(cfg)


@pytest.mark.parametrize('config', INFERENCE, ids=IDS)
def test_init_model(config, tmp_path):
    from sapiens2_mm.apis import init_model
    model = init_model(tiny_variant(config, str(tmp_path)))
    assert model.task == task_of(config)
    if model.task == 'pose':
        assert model.dataset_meta['num_keypoints'] == expected_keypoints(config)
        assert len(model.dataset_meta['flip_indices']) == expected_keypoints(
            config)
    elif model.task == 'seg':
        assert len(model.dataset_meta['classes']) == 29
    else:
        assert model.dataset_meta['task'] == model.task
        size = model.dataset_meta['input_size']
        assert size == (1024, 768) or ('tiny' in config and size in (
            (128, 96), (512, 384))) or ('-4k_' in config and size == (
                4096, 3072))


@pytest.mark.slow  # every shipped config: 3.1 min
@pytest.mark.parametrize('config', INFERENCE, ids=IDS)
def test_infer_cli_on_a_bundled_photo(config, tmp_path):
    out = tmp_path / 'out'
    task = task_of(config)
    rc = infer.main([task, tiny_variant(config, str(tmp_path)), '--input',
                     PHOTO, '--output', str(out)])
    assert rc == 0
    stem = osp.splitext(osp.basename(PHOTO))[0]
    assert (out / osp.basename(PHOTO)).is_file()  # the visualization
    if task == 'pose':
        data = read_json(out / 'out_predictions.json')
        assert data['num_keypoints'] == expected_keypoints(config)
        (frame, ) = data['frames']
        (person, ) = frame['instances']  # the whole-image box
        assert len(person['keypoints']) == expected_keypoints(config)
    elif task == 'seg':
        label = np.load(out / f'{stem}_seg.npy')
        assert label.shape == cv2.imread(PHOTO).shape[:2]  # original size
        assert 0 <= label.min() and label.max() < 29
    else:
        assert task in DENSE_TASKS
        size = cv2.imread(PHOTO).shape[:2]  # un-letterboxed to the original
        pred = np.load(out / f'{stem}_{task}.npy')
        assert pred.shape == (*size, 3) and np.isfinite(pred).all()
        if task == 'normal':
            # official order (issue 20): unit length at the network's
            # output, then resized (bilinear mixes shorten vectors)
            assert np.linalg.norm(pred, axis=-1).max() <= 1.0 + 1e-5
        elif task == 'albedo':
            assert pred.min() >= 0.0 and pred.max() <= 1.0
        else:  # metric depth = the pointmap's Z
            depth = np.load(out / f'{stem}_depth.npy')
            np.testing.assert_allclose(depth, pred[..., 2], rtol=1e-6)
            assert (out / f'{stem}.ply').is_file()


@pytest.mark.slow  # every shipped config: 6.3 min
@pytest.mark.parametrize('config', INFERENCE, ids=IDS)
def test_test_tool_on_one_sample_batch(config, tmp_path):
    tiny = tiny_variant(config, str(tmp_path), with_test_data=True)
    ckpt = random_checkpoint(tiny, str(tmp_path / 'random.pth'))
    name = osp.splitext(osp.basename(config))[0].replace('.', '_')
    metrics = test_tool.main([tiny, ckpt, '--work-dir', str(tmp_path / 'w'),
                              '--cfg-options', f'experiment_name=all_{name}'])
    # the metrics of the config's own evaluator (under its prefix, where it
    # has one), also written to test_metrics.json; no task is named here
    from mmengine.config import Config

    from sapiens2_mm.registry import METRICS
    evaluator = Config.fromfile(tiny).test_evaluator
    prefix = evaluator.get('prefix') or METRICS.get(
        evaluator['type']).default_prefix
    assert metrics, metrics
    if prefix:
        assert all(k.startswith(f'{prefix}/') for k in metrics), metrics
    assert set(read_json(tmp_path / 'w' / 'test_metrics.json')) == set(metrics)
