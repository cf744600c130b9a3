"""apis/run_config: the config rewrites of tools/train.py and tools/test.py,
called from Python (no runner is built)."""
import pytest

from sapiens2_mm.apis import run_config, test_config, train_config
from sapiens2_mm.utils.config_file import load_config
from tests.test_tools.workflow_utils import WORKFLOW_CFG


def _hooks(cfg, kind):
    """The custom hooks of type ``sapiens2_mm.<kind>`` (the tools prefix
    what they insert: they run configs of any scope)."""
    return [h for h in cfg.get('custom_hooks') or []
            if h['type'] == f'sapiens2_mm.{kind}']


def test_prepare_train_config_applies_every_rewrite(tmp_path):
    source = tmp_path / 'finetune.pth'
    source.write_bytes(b'not read before the first iteration')
    cfg = load_config(WORKFLOW_CFG)
    cfg.default_hooks.checkpoint.type = 'CheckpointHook'
    cfg.load_from = str(source)
    notes = []
    out = train_config.prepare_train_config(cfg, work_dir=str(tmp_path / 'w'),
                                            notes=notes)
    assert out is cfg and cfg.launcher == 'none'
    assert (tmp_path / 'w').is_dir()
    assert cfg.load_from is None  # loaded, checked, by the hook instead
    (load, ) = _hooks(cfg, 'CheckedCheckpointLoadHook')
    assert load == dict(type='sapiens2_mm.CheckedCheckpointLoadHook',
                        checkpoint=str(source), load_at='before_train',
                        allow_partial=False)
    assert cfg.default_hooks.checkpoint.type == \
        'sapiens2_mm.AtomicCheckpointHook'
    assert len(_hooks(cfg, 'RNGStateHook')) == 1
    assert any('AtomicCheckpointHook' in n for n in notes)
    # applied twice: still one load hook and one RNG hook
    cfg.load_from = str(source)
    train_config.prepare_train_config(cfg, work_dir=str(tmp_path / 'w'),
                                      load_partial=True)
    (load, ) = _hooks(cfg, 'CheckedCheckpointLoadHook')
    assert load['allow_partial'] is True
    assert len(_hooks(cfg, 'RNGStateHook')) == 1


def test_prepare_train_config_fsdp_loads_in_the_strategy(tmp_path):
    source = tmp_path / 'finetune.pth'
    source.write_bytes(b'x')
    cfg = load_config(WORKFLOW_CFG)
    cfg.strategy = dict(type='Sapiens2FSDPStrategy')
    cfg.load_from = str(source)
    train_config.prepare_train_config(cfg, work_dir=str(tmp_path),
                                      launcher='pytorch')
    assert cfg.strategy.load_before_wrap == dict(checkpoint=str(source),
                                                 allow_partial=False)
    assert not _hooks(cfg, 'CheckedCheckpointLoadHook')
    with pytest.raises(run_config.RunConfigError, match='distributed launch'):
        train_config.prepare_train_config(cfg, work_dir=str(tmp_path))


def test_prepare_test_config_applies_every_rewrite(tmp_path):
    ckpt = tmp_path / 'iter_1.pth'
    ckpt.write_bytes(b'x')
    cfg = load_config(WORKFLOW_CFG)
    cfg.load_from, cfg.resume = 'other.pth', True
    images_dir = test_config.prepare_test_config(
        cfg, str(ckpt), work_dir=str(tmp_path / 'w'),
        out=str(tmp_path / 'preds.pkl'), compiled=True)
    assert images_dir is None
    assert cfg.load_from is None and cfg.resume is False
    (load, ) = _hooks(cfg, 'CheckedCheckpointLoadHook')
    assert load['checkpoint'] == str(ckpt)
    assert cfg.test_evaluator[-1] == dict(
        type='sapiens2_mm.AtomicDumpResults',
        out_file_path=str(tmp_path / 'preds.pkl'))
    (speed, ) = _hooks(cfg, 'InferenceSpeedHook')
    assert speed == dict(type='sapiens2_mm.InferenceSpeedHook', compile=True,
                         dtype='fp32')
    with pytest.raises(run_config.RunConfigError, match='.pkl'):
        test_config.prepare_test_config(cfg, str(ckpt), out='preds.json')


@pytest.mark.parametrize('config', [
    'mmpose::body_2d_keypoint/topdown_heatmap/coco/'
    'td-hm_res50_8xb64-210e_coco-256x192.py',
    'mmseg::segformer/segformer_mit-b0_8xb2-160k_ade20k-512x512.py',
    'mmpretrain::resnet/resnet18_8xb32_in1k.py'])
def test_inserted_hooks_build_in_the_scope_of_a_stock_config(config,
                                                             tmp_path):
    """Issue 25: the hooks the tools insert were unprefixed, so a stock
    mmpose config failed with "AtomicCheckpointHook is not in the
    mmpose::hook registry". Every inserted type now builds under the
    config's own default scope (mmpose, mmseg, mmpretrain)."""
    from mmengine.config import Config
    from mmengine.registry import HOOKS, DefaultScope
    leaf = tmp_path / 'stock.py'  # the stock config, nothing changed
    leaf.write_text(f'_base_ = [{config!r}]\n')
    cfg = Config.fromfile(str(leaf))
    source = tmp_path / 'finetune.pth'
    source.write_bytes(b'x')
    cfg.load_from = str(source)
    train_config.prepare_train_config(cfg, work_dir=str(tmp_path / 'w'))
    inserted = [cfg.default_hooks.checkpoint] + [
        h for h in cfg.custom_hooks if 'sapiens2_mm' in str(h['type'])]
    assert {h['type'] for h in inserted} == {
        'sapiens2_mm.AtomicCheckpointHook', 'sapiens2_mm.RNGStateHook',
        'sapiens2_mm.CheckedCheckpointLoadHook'}
    with DefaultScope.overwrite_default_scope(cfg.default_scope):
        for hook in inserted:
            assert HOOKS.build(dict(hook)) is not None
