"""Reading official checkpoint files and checked loading."""
import pytest
import torch
from safetensors.torch import load_file, save_file

from sapiens2_mm.models.backbones import Sapiens2
from sapiens2_mm.utils import (
    CheckpointMismatchError,
    load_state_dict_checked,
    read_checkpoint,
    select_prefix,
)

TINY18 = dict(embed_dims=32, num_layers=18, num_heads=4, feedforward_channels=128,
              num_tokenizer_layers=2)


@pytest.fixture
def official(parity_file):
    return load_file(parity_file('tiny18_1k.safetensors'))


@pytest.mark.parametrize('wrap', ['state_dict', 'model', 'raw', 'teacher'])
def test_pth_layouts_read_back(tmp_path, official, wrap):
    if wrap == 'raw':
        payload = {f'module._orig_mod.{k}': v for k, v in official.items()}
    elif wrap == 'teacher':
        payload = {'teacher': {f'backbone.{k}': v for k, v in official.items()}}
    else:
        payload = {wrap: official, 'meta': {'note': 'x'}}
    path = tmp_path / 'ckpt.pth'
    torch.save(payload, path)
    state = read_checkpoint(str(path))
    assert set(state) == set(official)
    assert state['rope_embed.periods'].dtype == torch.bfloat16


def test_select_prefix_takes_backbone_of_task_file(parity_file):
    task = load_file(parity_file('tiny18_pose.safetensors'))
    backbone = select_prefix(task, 'backbone.')
    assert 'cls_token' in backbone and not any(
        k.startswith('decode_head') for k in backbone)
    bare = {'cls_token': torch.zeros(1)}
    assert select_prefix(bare, 'backbone.') == bare


def test_init_cfg_loads_pth_and_task_files(tmp_path, parity_file, official):
    torch.save({'state_dict': official}, tmp_path / 'pre.pth')
    for path in (str(tmp_path / 'pre.pth'), parity_file('tiny18_seg.safetensors')):
        model = Sapiens2(arch=TINY18, init_cfg=dict(type='Pretrained',
                                                    checkpoint=path))
        model.init_weights()
        expected = select_prefix(read_checkpoint(path), 'backbone.')
        torch.testing.assert_close(model.blocks[3].attn.wq.weight,
                                   expected['blocks.3.attn.wq.weight'])


def test_mismatch_report_names_keys(official):
    model = Sapiens2(arch=dict(TINY18, num_layers=17))
    with pytest.raises(CheckpointMismatchError) as err:
        load_state_dict_checked(model, official, source='tiny18_1k')
    text = str(err.value)
    assert 'unexpected in checkpoint (17)' in text
    assert 'blocks.17.ln1.weight' in text
    model = Sapiens2(arch=dict(TINY18, embed_dims=64))
    with pytest.raises(CheckpointMismatchError, match='shape mismatch'):
        load_state_dict_checked(model, official)


def test_partial_checkpoint_is_refused(official):
    del official['blocks.0.attn.wq.weight']
    with pytest.raises(CheckpointMismatchError,
                       match='missing in checkpoint \\(1\\): blocks.0.attn.wq'):
        load_state_dict_checked(Sapiens2(arch=TINY18), official)


def test_missing_file():
    model = Sapiens2(arch=TINY18, init_cfg=dict(type='Pretrained',
                                                checkpoint='/no/such.safetensors'))
    with pytest.raises(FileNotFoundError, match='/no/such.safetensors'):
        model.init_weights()


@pytest.mark.parametrize('suffix', ['.safetensors', '.pth'])
def test_corrupt_file(tmp_path, official, suffix):
    path = tmp_path / f'ckpt{suffix}'
    if suffix == '.safetensors':
        save_file(official, str(path))
    else:
        torch.save(official, path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match='truncated or corrupt'):
        read_checkpoint(str(path))


def test_non_dict_checkpoint(tmp_path):
    path = tmp_path / 'list.pth'
    torch.save([torch.zeros(1)], path)
    with pytest.raises(ValueError, match='holds a list'):
        read_checkpoint(str(path))


def test_1k_checkpoint_into_a_4k_backbone_names_the_tokenizer(tmp_path):
    one_k = Sapiens2(arch=TINY18).state_dict()
    four_k = Sapiens2(arch=TINY18, use_tokenizer=True)
    with pytest.raises(CheckpointMismatchError) as err:
        load_state_dict_checked(four_k, one_k, source='1k.safetensors')
    text = str(err.value)
    assert 'A 1K checkpoint for a 4K model' in text
    assert 'use_tokenizer=True' in text and 'tokenizer.local_pos_embed' in text
    # the same through a Pretrained init_cfg (the 4K configs' route)
    path = str(tmp_path / 'sapiens2_1b_pretrain.safetensors')
    save_file({k: v.contiguous() for k, v in one_k.items()}, path)
    model = Sapiens2(arch=TINY18, use_tokenizer=True,
                     init_cfg=dict(type='Pretrained', checkpoint=path))
    with pytest.raises(CheckpointMismatchError,
                       match='1K checkpoint for a 4K model'):
        model.init_weights()


def test_4k_checkpoint_into_a_1k_backbone_names_the_tokenizer():
    four_k = Sapiens2(arch=TINY18, use_tokenizer=True).state_dict()
    with pytest.raises(CheckpointMismatchError) as err:
        load_state_dict_checked(Sapiens2(arch=TINY18), four_k)
    text = str(err.value)
    assert 'A 4K checkpoint for a 1K model' in text
    assert 'tokenizer.local_pos_embed' in text and 'use_tokenizer=False' in text
