"""init_model: official checkpoints reproduce the official outputs; errors."""
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file, save_file

from sapiens2_mm.apis import init_model
from sapiens2_mm.utils import CheckpointMismatchError
from tests.conftest import (
    COCO_DIR,
    OFFICIAL_TOLERANCE,
    PARITY_DIR,
    REPO_DIR,
    max_diff_to_official,
)
from tests.tiny_variants import (
    DENSE_TASKS,
    INFERENCE,
    NOT_INFERENCE,
    head_overrides,
    task_of,
)

POSE_CFG = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_pose.py')
SEG_CFG = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py')


@pytest.mark.parametrize('task,cfg', [('pose', POSE_CFG), ('seg', SEG_CFG)])
def test_official_safetensors_reproduce_official_output(task, cfg):
    ckpt = osp.join(PARITY_DIR, f'tiny18_{task}.safetensors')
    io = load_file(osp.join(PARITY_DIR, f'tiny18_{task}_io.safetensors'))
    model = init_model(cfg, ckpt, device='cpu')
    assert model.task == task and not model.training
    with torch.no_grad():
        out = model(io['input'], None, mode='tensor')
    out = out[0] if isinstance(out, (tuple, list)) else out
    assert out.shape == io['output_0'].shape
    assert max_diff_to_official(out, task) <= OFFICIAL_TOLERANCE


def test_dataset_meta_attached():
    pose = init_model(POSE_CFG)
    assert pose.dataset_meta['num_keypoints'] == 308
    assert len(pose.dataset_meta['flip_indices']) == 308
    seg = init_model(SEG_CFG)
    assert len(seg.dataset_meta['classes']) == 29
    assert seg.dataset_meta['classes'][4] == 'Hair'


def test_missing_config_and_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match='Config file not found'):
        init_model(str(tmp_path / 'nope.py'))
    with pytest.raises(FileNotFoundError, match='nope.safetensors'):
        init_model(POSE_CFG, str(tmp_path / 'nope.safetensors'))


def test_checkpoint_of_another_task_is_named():
    seg_ckpt = osp.join(PARITY_DIR, 'tiny18_seg.safetensors')
    with pytest.raises(ValueError, match="'seg' checkpoint.*'pose' model"):
        init_model(POSE_CFG, seg_ckpt)
    pretrain = osp.join(PARITY_DIR, 'tiny18_1k.safetensors')
    with pytest.raises(ValueError, match='only backbone'):
        init_model(SEG_CFG, pretrain)


def test_checkpoint_of_another_size_lists_keys(tmp_path):
    state = load_file(osp.join(PARITY_DIR, 'tiny18_seg.safetensors'))
    state['decode_head.conv_seg.weight'] = torch.zeros(29, 4, 1, 1)
    bad = str(tmp_path / 'bad.safetensors')
    save_file(state, bad)
    with pytest.raises(CheckpointMismatchError,
                       match=r'decode_head.conv_seg.weight checkpoint'):
        init_model(SEG_CFG, bad)


TINY_ARCH = dict(embed_dims=32, num_layers=2, num_heads=2,
                 feedforward_channels=64, num_tokenizer_layers=0)


def _tiny(path):
    """The shipped config with a 2-block, 32-channel backbone and a narrow
    head (tests/tiny_variants.head_overrides: pose, seg, dense, probe)."""
    cfg = Config.fromfile(path)
    cfg.model.backbone.arch = dict(TINY_ARCH)
    cfg.model.backbone.img_size = (64, 48)
    cfg.model.backbone.init_cfg = None
    key, overrides = head_overrides(cfg.model)
    cfg.model[key].update(overrides)
    return cfg


@pytest.mark.parametrize('path', INFERENCE,
                         ids=lambda p: osp.relpath(p, REPO_DIR))
def test_every_shipped_config_builds_with_meta(path):
    """Every inference config of configs/ (308-keypoint and dense ones
    included) goes through init_model with its own dataset meta; the
    pretraining configs (tiny_variants.NOT_INFERENCE) are no inference
    model and build in tests/test_configs.py."""
    cfg = _tiny(path)
    model = init_model(cfg)
    meta = model.dataset_meta
    assert model.task == task_of(path)
    if model.task == 'pose':
        assert meta['num_keypoints'] == cfg.model.head.out_channels
        assert len(meta['flip_indices']) == meta['num_keypoints']
    elif model.task == 'seg':
        assert len(meta['classes']) == cfg.model.decode_head.num_classes
    else:
        assert model.task in DENSE_TASKS
        assert meta['task'] == model.task
        assert meta['input_size'] == (64, 48)


def test_pretrain_config_is_refused_by_name():
    """init_model names the model type it has no task for."""
    (path, ) = [p for p in NOT_INFERENCE if 'tiny_pretrain' in p]
    with pytest.raises(ValueError, match="model type 'Sapiens2Pretrainer'"):
        init_model(osp.join(REPO_DIR, path))


def test_308_config_meta_is_the_sapiens2_table():
    from mmpose.datasets.datasets.utils import parse_pose_metainfo

    from sapiens2_mm.metainfo.pose import keypoints308_dataset_info
    path = osp.join(REPO_DIR,
                    'configs/pose/sapiens2-1b_8xb7-20k_sapiens308-1024x768.py')
    meta = init_model(_tiny(path)).dataset_meta
    ref = parse_pose_metainfo(keypoints308_dataset_info())
    assert meta['keypoint_id2name'] == ref['keypoint_id2name']
    assert list(meta['flip_indices']) == list(ref['flip_indices'])


@pytest.mark.parametrize('task,cfg', [('pose', POSE_CFG), ('seg', SEG_CFG)])
def test_inferencer_on_a_config_without_test_dataloader(task, cfg):
    """tiny18_*.py are bare model configs: the task's default pipeline (the
    official resize / top-down crop) stands in for the test pipeline."""
    from sapiens2_mm.apis import build_inferencer
    model = init_model(cfg, osp.join(PARITY_DIR, f'tiny18_{task}.safetensors'))
    image = cv2.imread(osp.join(COCO_DIR,
                                '000000040083.jpg'))
    result = build_inferencer(model, flip_test=False)(image)[0]
    if task == 'seg':
        assert result.label_map.shape == image.shape[:2]
        # equal to the official steps: resize to the network size, forward,
        # bilinear back, argmax
        from sapiens2_mm.datasets.seg.transforms.resize import resize_image
        x = resize_image(image, 128, 96)[..., ::-1].astype(np.float32)
        x = (x - [123.675, 116.28, 103.53]) / [58.395, 57.12, 57.375]
        x = torch.from_numpy(x.transpose(2, 0, 1).copy()).float()[None]
        with torch.no_grad():
            logits = torch.nn.functional.interpolate(
                model(x, None, mode='tensor'), size=image.shape[:2],
                mode='bilinear')[0]
        top2 = logits.topk(2, dim=0).values
        decided = (top2[0] - top2[1]).numpy() > 1e-4
        np.testing.assert_array_equal(result.label_map[decided],
                                      logits.argmax(0).numpy()[decided])
    else:
        assert result.keypoints.shape == (1, 308, 2)
        assert np.isfinite(result.keypoints).all()
