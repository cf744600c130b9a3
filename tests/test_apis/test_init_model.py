"""init_model: official checkpoints reproduce the official outputs; errors."""
import os.path as osp

import pytest
import torch
from safetensors.torch import load_file, save_file

from sapiens2_mm.apis import init_model
from sapiens2_mm.utils import CheckpointMismatchError
from tests.conftest import PARITY_DIR, REPO_DIR

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
    assert (out - io['output_0']).abs().max().item() <= 1e-5


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
