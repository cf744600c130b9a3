"""The dense task descriptions: official tiny18 files through init_model,
config recognition, dataset meta, checkpoint checks and the inferencer."""
import glob
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file

from sapiens2_mm.apis import build_inferencer, find_task, init_model
from tests.conftest import (
    OFFICIAL_TOLERANCE,
    PARITY_DIR,
    REPO_DIR,
    max_diff_to_official,
)
from tests.test_apis.tiny_configs import tiny_model

# the dense tasks this package registers (each has official tiny18 vectors)
from tests.tiny_variants import DENSE_TASKS as TASKS


def _parity_config(task):
    return osp.join(REPO_DIR, 'tests', 'configs', 'parity',
                    f'tiny18_{task}.py')


@pytest.mark.parametrize('task', TASKS)
def test_official_tiny18_through_init_model(task):
    ckpt = osp.join(PARITY_DIR, f'tiny18_{task}.safetensors')
    io = load_file(osp.join(PARITY_DIR, f'tiny18_{task}_io.safetensors'))
    model = init_model(_parity_config(task), ckpt, device='cpu')
    assert model.task == task and not model.training
    # official decode_head. keys load unchanged (no rename for dense tasks)
    assert set(load_file(ckpt)) == set(model.state_dict())
    with torch.no_grad():
        out = model(io['input'], None, mode='tensor')
    # nearest of the official runs (two CPUs, conftest.official_output_sets)
    assert max_diff_to_official(out, task) <= OFFICIAL_TOLERANCE


def test_parity_fails_with_a_changed_weight(tmp_path):
    from safetensors.torch import save_file
    state = load_file(osp.join(PARITY_DIR, 'tiny18_normal.safetensors'))
    state['decode_head.conv_normal.bias'] = \
        state['decode_head.conv_normal.bias'] + 1e-3
    path = str(tmp_path / 'changed.safetensors')
    save_file(state, path)
    io = load_file(osp.join(PARITY_DIR, 'tiny18_normal_io.safetensors'))
    model = init_model(_parity_config('normal'), path)
    with torch.no_grad():
        out = model(io['input'], None, mode='tensor')
    assert max_diff_to_official(out, 'normal') > OFFICIAL_TOLERANCE


def test_every_dense_config_is_recognised():
    from sapiens2_mm.utils import register_all_modules
    register_all_modules()
    for task in TASKS:
        paths = glob.glob(osp.join(REPO_DIR, 'configs', task, '*.py'))
        assert paths, task
        for path in paths:
            assert find_task(Config.fromfile(path)).name == task, path
        assert find_task(Config.fromfile(_parity_config(task))).name == task


def test_dataset_meta_and_default_pipeline():
    model = init_model(_parity_config('pointmap'))  # no test_dataloader
    assert model.dataset_meta == {'task': 'pointmap',
                                  'input_size': (256, 192)}
    inferencer = build_inferencer(model)
    assert type(inferencer).__name__ == 'PointmapInferencer'
    steps = [type(t).__name__ for t in inferencer.pipeline.transforms]
    assert steps == ['DenseResizePad', 'PackDenseInputs']
    meta = tiny_model('albedo').dataset_meta
    assert meta['task'] == 'albedo' and meta['input_size'] == (128, 96)


def test_checkpoint_of_another_dense_task_is_named():
    normal = osp.join(PARITY_DIR, 'tiny18_normal.safetensors')
    with pytest.raises(ValueError,
                       match="'normal' checkpoint.*'albedo' model"):
        init_model(_parity_config('albedo'), normal)


def test_inferencer_outputs_at_the_frame_size():
    """Un-letterboxed to the frame; units and ranges of each task."""
    torch.manual_seed(0)
    frame = np.random.RandomState(0).randint(0, 255, (90, 200, 3), np.uint8)
    normal_model = tiny_model('normal')
    normal = build_inferencer(normal_model)(frame)[0]
    assert normal.image_size == (90, 200) and normal.normal.shape == (90, 200,
                                                                      3)
    # official order: unit length before the resize, so at most 1 after it
    length = np.linalg.norm(normal.normal, axis=2)
    assert length.max() <= 1 + 1e-5 and length.mean() > 0.5
    renorm = build_inferencer(normal_model, postprocess=dict(
        normalize='after_resize'))(frame)[0]
    np.testing.assert_allclose(np.linalg.norm(renorm.normal, axis=2), 1,
                               atol=1e-4)
    assert normal.pointmap is None and normal.focal_length is None
    albedo = build_inferencer(tiny_model('albedo'))(frame)[0]
    assert albedo.albedo.min() >= 0 and albedo.albedo.max() <= 1
    model = tiny_model('pointmap')
    last = model.decode_head.scale_final_layer[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(0.5)
    point = build_inferencer(model)(frame)[0]
    # 200x90 -> 96x43 in 96x128: r = 96 / 200
    assert point.focal_length == pytest.approx(768 / (0.5 * 96 / 200))
    np.testing.assert_array_equal(point.depth, point.pointmap[..., 2])
