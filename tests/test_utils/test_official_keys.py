"""Official checkpoint key layouts: declared by the heads, read from MODELS."""
import pytest
import torch
from torch import nn

from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils import (
    OfficialLayout,
    detect_task,
    official_tasks,
    official_to_package,
    package_to_official,
)
from sapiens2_mm.utils.official_keys import official_layouts


def test_each_head_declares_its_task_layout():
    from sapiens2_mm.models.heads import (
        AlbedoHead,
        NormalHead,
        PointmapHead,
        PoseHeatmapHead,
        SegHead,
    )
    heads = {'pose': PoseHeatmapHead, 'seg': SegHead, 'normal': NormalHead,
             'pointmap': PointmapHead, 'albedo': AlbedoHead}
    layouts = official_layouts()
    assert set(official_tasks()) == {'pretrain', *heads}
    for task, head in heads.items():
        assert layouts[task] is head.official_layout
        assert layouts[task].marker.startswith('conv_')


def test_pose_keys_round_trip():
    state = {'decode_head.conv_pose.weight': torch.zeros(1),
             'backbone.cls_token': torch.zeros(1)}
    assert detect_task(state) == 'pose'
    mapped = official_to_package(state, 'pose')
    assert list(mapped) == ['head.conv_pose.weight', 'backbone.cls_token']
    assert list(package_to_official(mapped, 'pose')) == list(state)


@pytest.mark.parametrize('task', ['seg', 'normal', 'pointmap', 'albedo'])
def test_dense_and_seg_keys_are_the_official_ones(task):
    state = {f'decode_head.conv_{task}.weight': torch.zeros(1)}
    assert detect_task(state) == task
    assert official_to_package(state, task) == state
    assert package_to_official(state, task) == state


def test_backbone_only_is_pretrain_and_unknown_is_refused():
    assert detect_task({'cls_token': torch.zeros(1)}) == 'pretrain'
    with pytest.raises(ValueError, match='pass the task explicitly'):
        detect_task({'something.else': torch.zeros(1)})


def test_a_task_without_a_layout_keeps_its_keys():
    state = {'decode_head.conv_x.weight': torch.zeros(1)}
    assert official_to_package(state, 'no_layout_task') == state


def test_a_registered_head_brings_its_layout(monkeypatch):
    """A new head declares its layout and nothing else changes; a subclass
    inheriting it counts once; two different layouts for a task are refused."""

    class ToyMattingHead(nn.Module):
        official_layout = OfficialLayout('matting', 'conv_matte.weight',
                                         renames={'decode_head.': 'matte.'})

    class ToyMattingHeadV2(ToyMattingHead):
        pass

    class ClashingHead(nn.Module):
        official_layout = OfficialLayout('matting', 'conv_other.weight')

    classes = {'ToyMattingHead': ToyMattingHead,
               'ToyMattingHeadV2': ToyMattingHeadV2}
    MODELS.import_from_location()
    monkeypatch.setattr(MODELS, '_module_dict',
                        {**MODELS.module_dict, **classes})
    state = {'decode_head.conv_matte.weight': torch.zeros(1)}
    assert detect_task(state) == 'matting'
    assert 'matting' in official_tasks()
    assert list(official_to_package(state, 'matting')) == [
        'matte.conv_matte.weight']

    monkeypatch.setattr(MODELS, '_module_dict',
                        {**MODELS.module_dict, 'ClashingHead': ClashingHead})
    with pytest.raises(ValueError, match='different official key layouts'):
        official_layouts()


def test_backbone_with_an_undeclared_head_is_not_called_pretrain():
    """Backbone keys plus the head of a task without an official layout:
    an unknown layout (ValueError, so init_model's checked load lists the
    keys), not a pretraining checkpoint to be refused as one."""
    backbone = {'backbone.cls_token': torch.zeros(1),
                'backbone.blocks.0.w': torch.zeros(1)}
    assert detect_task(backbone) == 'pretrain'
    assert detect_task({'cls_token': torch.zeros(1)}) == 'pretrain'
    with pytest.raises(ValueError, match='Cannot tell the Sapiens2 task'):
        detect_task({**backbone, 'decode_head.conv_matte.weight':
                     torch.zeros(1)})
