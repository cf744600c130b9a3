"""apis/model_cost (get_flops.py, compare_models.py) on the sample baselines:
the MACs equal an independent count at the config's input size.

The independent count walks the modules of a real CPU forward: every
Conv2d / ConvTranspose2d / Linear from its weight and the shape it saw, and
every attention by formula (nn.MultiheadAttention: its four projections and
QK^T, AV from the query and key lengths; a ViT's blocks: 2 N^2 D each).
get_flops counts at the level of torch's dispatched ops instead."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from torch import nn

from sapiens2_mm.apis.model_cost import (
    build_for_counting,
    config_cost,
    config_input_shape,
)
from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils.setup_env import in_config_scope
from tests.conftest import REPO_DIR

BASELINES = osp.join(REPO_DIR, 'configs', 'baselines')


def _cfg(*parts):
    return Config.fromfile(osp.join(BASELINES, *parts))


def _module_macs(model: nn.Module, shape) -> int:
    """Conv / transposed conv / linear MACs from the shapes seen in a real
    forward, and nn.MultiheadAttention by formula."""
    total = [0]

    def conv(module, inputs, output):
        k = module.kernel_size[0] * module.kernel_size[1]
        if isinstance(module, nn.ConvTranspose2d):  # each input scatters
            total[0] += inputs[0].numel() * (module.out_channels //
                                              module.groups) * k
        else:
            total[0] += output.numel() * (module.in_channels //
                                          module.groups) * k

    def linear(module, inputs, output):
        total[0] += output.numel() * module.in_features

    def attention(module, args, kwargs, output):
        query = kwargs.get('query', args[0] if args else None)
        key = kwargs.get('key', args[1] if len(args) > 1 else query)
        dim = module.embed_dim
        lq = query.shape[1] if module.batch_first else query.shape[0]
        lk = key.shape[1] if module.batch_first else key.shape[0]
        batch = query.shape[0] if module.batch_first else query.shape[1]
        # q and out projections on lq tokens, k and v on lk, QK^T and AV
        total[0] += batch * (2 * lq * dim * dim + 2 * lk * dim * dim +
                             2 * lq * lk * dim)

    handles = []
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
            handles.append(module.register_forward_hook(conv))
        elif isinstance(module, nn.Linear) and not getattr(
                module, '_inside_mha', False):
            handles.append(module.register_forward_hook(linear))
        elif isinstance(module, nn.MultiheadAttention):
            module.out_proj._inside_mha = True  # called functionally
            handles.append(module.register_forward_hook(attention,
                                                        with_kwargs=True))
    with torch.no_grad():
        model(torch.zeros(1, 3, *shape), None, mode='tensor')
    for handle in handles:
        handle.remove()
    return total[0]


def _real_model(cfg):
    with in_config_scope(cfg):
        return MODELS.build(cfg.model).eval()  # the weights do not matter


@pytest.mark.parametrize('parts', [
    ('pose', 'td-hm_res18_1xb12-300_cocosample-128x96.py'),
    ('seg', 'deeplabv3plus_r18-d8_1xb2-30_seg29sample-128x96.py'),
    ('seg', 'segformer_mit-b0_1xb2-30_seg29sample-128x96.py'),
])
def test_macs_equal_a_module_walk(parts):
    cfg = _cfg(*parts)
    shape, source = config_input_shape(cfg)
    assert shape == (128, 96) and 'test pipeline' in source
    result = config_cost(cfg)
    # the module walk sees the layers of the SegFormer MHA only through
    # the formula; nothing is counted twice
    assert result['macs'] == _module_macs(_real_model(cfg), shape)
    assert result['flops'] == 2 * result['macs']
    real = sum(p.numel() for p in _real_model(cfg).parameters())
    assert result['params'] == real


def test_vit_macs_equal_the_formula():
    """ViTPose-tiny: the linear and conv layers from the module walk, the
    attention by formula: 4 layers x 2 N^2 D with N = 8 x 6 patches (no CLS
    token) and D = 64."""
    cfg = _cfg('pose', 'td-hm_vitpose-tiny_1xb12-300_cocosample-128x96.py')
    result = config_cost(cfg)
    model = _real_model(cfg)
    attention = 4 * 2 * (8 * 6)**2 * 64
    assert result['attention_macs'] == attention
    assert result['macs'] == _module_macs(model, (128, 96)) + attention


def test_segformer_meta_build_falls_back_and_says_so():
    cfg = _cfg('seg', 'segformer_mit-b0_1xb2-30_seg29sample-128x96.py')
    model, how = build_for_counting(cfg)
    assert next(model.parameters()).device.type == 'meta'
    assert 'Tensor.item()' in how and 'CPU' in how


def test_input_shape_sources_and_no_silent_default():
    pose = Config.fromfile(osp.join(
        REPO_DIR, 'configs', 'pose',
        'sapiens2-tiny_1xb12-300_cocosample-128x96.py'))
    assert config_input_shape(pose)[0] == (128, 96)
    pose = Config(dict(model=pose.model.to_dict()))  # no test pipeline
    assert config_input_shape(pose) == (
        (128, 96), 'codec input_size (model.head.decoder)')
    bare = Config(dict(model=dict(type='mmseg.EncoderDecoder',
                                  backbone=dict(type='mmseg.ResNetV1c'))))
    with pytest.raises(ValueError, match='--shape H W'):
        config_input_shape(bare)
    bare.model.data_preprocessor = dict(size=(64, 48))
    assert config_input_shape(bare) == ((64, 48),
                                        'model.data_preprocessor.size')


def test_get_flops_cli_names_source_conventions_and_build(capsys):
    """The command of docs/baselines.md on SegFormer (the meta build fails
    there: built on the CPU, then moved)."""
    import importlib.util
    path = osp.join(REPO_DIR, 'tools', 'analysis_tools', 'get_flops.py')
    spec = importlib.util.spec_from_file_location('get_flops_cli', path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    config = osp.join(BASELINES, 'seg',
                      'segformer_mit-b0_1xb2-30_seg29sample-128x96.py')
    result = tool.main([config])
    out = capsys.readouterr().out
    assert 'input 1x3x128x96 (from test pipeline step 1 (SegResize))' in out
    assert 'what the mmpose / mmseg model zoos print as "FLOPs"' in out
    assert '(= 2 x MACs' in out
    assert 'built on the CPU, then moved to the meta device' in out
    assert result['flops'] == 2 * result['macs'] == 2 * _module_macs(
        _real_model(Config.fromfile(config)), (128, 96))
