"""Official <-> sapiens2_mm checkpoint conversion round trips and publishing."""
import os.path as osp
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from sapiens2_mm.utils import detect_task
from sapiens2_mm.utils.checkpoint_convert import (
    mmengine_to_official,
    official_to_mmengine,
    publish_checkpoint,
)


@pytest.mark.parametrize('name,task', [
    ('tiny18_1k', 'pretrain'), ('tiny18_4k', 'pretrain'), ('tiny18_pose', 'pose'),
    ('tiny18_seg', 'seg'), ('tiny18_normal', 'normal'),
    ('tiny18_pointmap', 'pointmap'), ('tiny18_albedo', 'albedo')
])
def test_round_trip_is_bit_exact(tmp_path, parity_file, name, task):
    src = parity_file(f'{name}.safetensors')
    original = load_file(src)
    assert detect_task(original) == task
    pth = str(tmp_path / 'mm.pth')
    assert official_to_mmengine(src, pth) == task
    converted = torch.load(pth, weights_only=True)['state_dict']
    if task == 'pose':
        assert all(not k.startswith('decode_head.') for k in converted)
        assert 'head.conv_pose.weight' in converted
    else:
        assert set(converted) == set(original)
    back = str(tmp_path / 'back.safetensors')
    mmengine_to_official(pth, back)
    restored = load_file(back)
    assert list(restored) == sorted(original) or set(restored) == set(original)
    for key, value in original.items():
        assert restored[key].dtype == value.dtype, key
        assert torch.equal(restored[key], value), key


def test_refuses_to_overwrite(tmp_path, parity_file):
    dst = tmp_path / 'x.pth'
    dst.write_bytes(b'keep me')
    with pytest.raises(FileExistsError, match='--overwrite'):
        official_to_mmengine(parity_file('tiny18_1k.safetensors'), str(dst))
    assert dst.read_bytes() == b'keep me'


def test_unknown_layout_is_reported(tmp_path):
    src = tmp_path / 'other.pth'
    torch.save({'state_dict': {'fc.weight': torch.zeros(2, 2)}}, src)
    with pytest.raises(ValueError, match='Cannot tell the Sapiens2 task'):
        official_to_mmengine(str(src), str(tmp_path / 'out.pth'))


def test_publish_strips_training_state(tmp_path):
    src = tmp_path / 'iter_10.pth'
    weights = {'backbone.cls_token': torch.ones(1, 1, 4)}
    torch.save({'meta': {'iter': 10}, 'state_dict': weights,
                'optimizer': {'state': {}}, 'message_hub': {}}, src)
    final = publish_checkpoint(str(src), str(tmp_path / 'model.pth'))
    assert osp.basename(final).startswith('model-') and final.endswith('.pth')
    published = torch.load(final, weights_only=True)
    assert set(published) == {'meta', 'state_dict'}
    assert torch.equal(published['state_dict']['backbone.cls_token'],
                       weights['backbone.cls_token'])


def test_cli(tmp_path, parity_file, repo_path):
    dst = tmp_path / 'seg.pth'
    result = subprocess.run(
        [sys.executable,
         repo_path('tools', 'model_converters', 'sapiens2_official_to_mm.py'),
         parity_file('tiny18_seg.safetensors'), str(dst)],
        capture_output=True, text=True, cwd=repo_path())
    assert result.returncode == 0, result.stderr
    assert 'Converted seg checkpoint' in result.stdout
    assert dst.exists()
