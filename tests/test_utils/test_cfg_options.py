"""--cfg-options: hook typos refused, variable overrides refused with the keys
that hold their value, a new training length moves the scheduler (one note)."""
import os.path as osp
import re

import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.utils.cfg_options import (
    UnknownConfigKeyError,
    apply_cfg_options,
    find_unknown_cfg_options,
)
from tests.conftest import REPO_DIR
from tests.test_tools.workflow_utils import WORKFLOW_CFG

POSE_TINY = osp.join(REPO_DIR, 'configs', 'pose',
                     'sapiens2-tiny_1xb12-300_cocosample-128x96.py')
POSE_SCHEDULE = osp.join(REPO_DIR, 'configs', '_base_', 'schedules',
                         'pose_adamw-poly-10k.py')


@pytest.mark.parametrize('hook_type', ['CheckpointHook', 'AtomicCheckpointHook'])
def test_checkpoint_hook_typo_refused(hook_type):
    """CheckpointHook takes **kwargs, which only reach save_checkpoint."""
    from sapiens2_mm.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    cfg = Config.fromfile(WORKFLOW_CFG)
    cfg.default_hooks.checkpoint.type = hook_type
    problems = find_unknown_cfg_options(cfg, {
        'default_hooks.checkpoint.intervall': 1,
        'default_hooks.checkpoint.save_best': 'mIoU',  # a real argument
    })
    assert list(problems) == ['default_hooks.checkpoint.intervall']
    assert "'interval'" in problems['default_hooks.checkpoint.intervall']


def test_pipeline_variable_override_refused_naming_its_copy():
    """No action at a distance: train_pipeline is a variable the runner
    never reads; the error names the key to set, and that key works."""
    cfg = Config.fromfile(WORKFLOW_CFG)
    with pytest.raises(UnknownConfigKeyError, match='config variable') as err:
        apply_cfg_options(cfg, {'train_pipeline.2.prob': 1.0})
    assert 'train_dataloader.dataset.pipeline.2.prob' in str(err.value)
    assert cfg.train_dataloader.dataset.pipeline[2].prob == 0.5  # untouched
    notes = apply_cfg_options(
        cfg, {'train_dataloader.dataset.pipeline.2.prob': 1.0})
    assert notes == []
    assert cfg.train_dataloader.dataset.pipeline[2].prob == 1.0
    assert cfg.train_pipeline[2].prob == 0.5  # only the named key changed


def test_dict_variable_override_lists_every_copy():
    cfg = Config.fromfile(POSE_TINY)
    with pytest.raises(UnknownConfigKeyError) as err:
        apply_cfg_options(cfg, {'codec.sigma': 3.0})
    assert 'model.head.decoder.sigma' in str(err.value)
    assert 'train_dataloader.dataset.pipeline.4.encoder.sigma' in str(
        err.value)
    assert cfg.model.head.decoder.sigma != 3.0


@pytest.mark.parametrize('key,hint', [
    ('max_iters', 'train_cfg.max_iters'),
    ('coco_sample_root', 'train_dataloader.dataset.data_root'),
    ('dataset.ann_file', 'no key')])
def test_variable_override_that_changes_nothing_refused(key, hint):
    cfg = Config.fromfile(POSE_TINY)
    with pytest.raises(UnknownConfigKeyError, match='changes nothing') as err:
        apply_cfg_options(cfg, {key: 5})
    assert hint in str(err.value)


def test_folder_variable_names_every_accepted_key_that_uses_it():
    """Issue 25: data_root of the COCO config named dataset.data_root (a
    config variable, itself refused) and left out the evaluators' ann_file,
    which is built from it."""
    cfg = Config.fromfile(osp.join(REPO_DIR, 'configs', 'pose',
                                   'sapiens2-1b_8xb7-20k_coco-1024x768.py'))
    with pytest.raises(UnknownConfigKeyError) as err:
        apply_cfg_options(cfg, {'data_root': 'mine/'})
    text = str(err.value)
    named = re.findall(r'[a-z_]+(?:\.[a-z_]+)+', text.split('instead')[-1])
    assert set(named) == {
        'train_dataloader.dataset.data_root', 'val_dataloader.dataset.data_root',
        'test_dataloader.dataset.data_root', 'val_evaluator.ann_file',
        'test_evaluator.ann_file'}
    # every key it names is accepted
    apply_cfg_options(cfg, {k: 'x' for k in named})


def test_sub_key_of_an_unset_argument_starts_from_its_default():
    """Issue 25: data_prefix.normal_path was refused with "has no key
    'data_prefix'. Did you mean 'data_prefix'"."""
    cfg = Config.fromfile(osp.join(
        REPO_DIR, 'configs', 'normal',
        'sapiens2-tiny_1xb2-30_densesample-128x96.py'))
    assert 'data_prefix' not in cfg.train_dataloader.dataset
    notes = apply_cfg_options(
        cfg, {'train_dataloader.dataset.data_prefix.normal_path': 'n'})
    assert cfg.train_dataloader.dataset.data_prefix == dict(normal_path='n')
    assert 'data_prefix was not set' in notes[0]
    seg = Config.fromfile(osp.join(
        REPO_DIR, 'configs', 'seg', 'sapiens2-tiny_1xb2-30_seg29sample-128x96.py'))
    seg.train_dataloader.dataset.pop('data_prefix')
    with pytest.raises(UnknownConfigKeyError) as err:
        apply_cfg_options(seg, {'train_dataloader.dataset.data_prefix.img_pth': 1})
    assert "has no key 'img_pth'. Did you mean 'img_path'?" in str(err.value)
    assert "no key 'data_prefix'" not in str(err.value)
    apply_cfg_options(seg, {'train_dataloader.dataset.data_prefix.img_path':
                            'photos'})
    # the class default's other entry is kept
    assert seg.train_dataloader.dataset.data_prefix == dict(
        img_path='photos', seg_map_path='')


def _lrs(param_scheduler, max_iters):
    """The learning rate of each iteration, stepped by mmengine itself."""
    from mmengine.optim.scheduler import LinearLR, PolyLR
    param = torch.nn.Parameter(torch.zeros(1))
    optim = torch.optim.SGD([param], lr=1.0)
    types = dict(LinearLR=LinearLR, PolyLR=PolyLR)
    scheds = [types[s['type']](optim, **{k: v for k, v in s.items()
                                         if k != 'type'})
              for s in param_scheduler]
    lrs = []
    for _ in range(max_iters):
        lrs.append(optim.param_groups[0]['lr'])
        for s in scheds:
            s.step()
    return lrs


@pytest.mark.parametrize('new', [20000, 100, 3])
def test_max_iters_moves_scheduler(new):
    cfg = Config.fromfile(POSE_SCHEDULE)
    notes = apply_cfg_options(cfg, {'train_cfg.max_iters': new})
    assert cfg.train_cfg.max_iters == new
    assert len(notes) == 1 and 'param_scheduler.1.end' in notes[0], notes
    assert f'train_cfg.max_iters={new} (was 10000) rescaled' in notes[0]
    lrs = _lrs(cfg.param_scheduler, new)
    # warmup from 1e-3, then a linear decay that reaches 0 exactly at the new
    # last iteration (with the old end=10000 it would stop early or late)
    assert lrs[0] == pytest.approx(1e-3)
    if new > 500:
        assert cfg.param_scheduler[0].end == 500  # warmup length kept
        assert lrs[500] == pytest.approx(1.0)
    assert lrs[-1] == 0.0 and lrs[-2] > 0.0
    assert cfg.param_scheduler[0].end == cfg.param_scheduler[1].begin


def test_max_iters_keeps_a_scheduler_key_set_explicitly():
    cfg = Config.fromfile(POSE_SCHEDULE)
    notes = apply_cfg_options(cfg, {'train_cfg.max_iters': 2000,
                                    'param_scheduler.1.end': 1500})
    assert cfg.param_scheduler[1].end == 1500
    assert 'param_scheduler.1.end' not in ''.join(notes)


def test_tool_keys_accepted_at_top_level():
    cfg = Config.fromfile(WORKFLOW_CFG)
    assert find_unknown_cfg_options(cfg, {'load_partial': True}) == {}
    assert apply_cfg_options(cfg, {'load_partial': True}) == []
    assert cfg.load_partial is True


def _every_shipped_config():
    from tests.tiny_variants import SHIPPED
    return [osp.relpath(p, REPO_DIR) for p in SHIPPED]


def test_init_cfg_checkpoint_override_fits_every_config():
    """Issue 18: the documented ``model.backbone.init_cfg.checkpoint=FILE``
    ended in mmengine's 'cannot inherit from base' TypeError on every config
    whose init_cfg is None (the tiny ones, the pretraining ones)."""
    key = 'model.backbone.init_cfg.checkpoint'
    was_none = []
    for config in _every_shipped_config():
        cfg = Config.fromfile(osp.join(REPO_DIR, config))
        before = cfg.model.backbone.get('init_cfg')
        notes = apply_cfg_options(cfg, {key: 'mine.safetensors'})
        init_cfg = cfg.model.backbone.init_cfg
        assert init_cfg['checkpoint'] == 'mine.safetensors', config
        assert init_cfg['type'] == 'Pretrained', config
        if before is None:
            was_none.append(config)
            assert 'model.backbone.init_cfg was None' in notes[0], config
        else:
            assert dict(init_cfg) == dict(before, checkpoint='mine.safetensors')
    assert len(was_none) >= 6  # 5 tiny task configs and the pretrain ones


def test_init_cfg_filled_with_a_given_type():
    cfg = Config.fromfile(WORKFLOW_CFG)
    assert cfg.model.backbone.init_cfg is None
    apply_cfg_options(cfg, {'model.backbone.init_cfg.type': 'Pretrained',
                            'model.backbone.init_cfg.checkpoint': 'a.pth',
                            'model.backbone.init_cfg.prefix': 'backbone.'})
    assert dict(cfg.model.backbone.init_cfg) == dict(
        type='Pretrained', checkpoint='a.pth', prefix='backbone.')
