"""tools/test.py --compile / --dtype: the hook they add, and their errors."""
import warnings
from types import SimpleNamespace

import pytest
import torch

from sapiens2_mm.apis import run_config
from sapiens2_mm.engine.hooks import InferenceSpeedHook
from sapiens2_mm.runtime.compilation import CompileFallbackWarning
from tests.conftest import load_tool
from tests.test_apis.tiny_configs import tiny_model

from .workflow_utils import WORKFLOW_CFG


def _args(tmp_path, *extra):
    ckpt = tmp_path / 'model.pth'
    ckpt.write_bytes(b'')
    tool = load_tool('test')
    return tool, tool.parse_args([WORKFLOW_CFG, str(ckpt), '--work-dir',
                                  str(tmp_path / 'w'), *extra])


def test_compile_and_dtype_add_the_speed_hook(tmp_path):
    tool, args = _args(tmp_path, '--compile')
    cfg = tool.build_cfg(args)
    speed = 'sapiens2_mm.InferenceSpeedHook'
    hooks = [h for h in cfg.custom_hooks if h['type'] == speed]
    assert hooks == [dict(type=speed, compile=True, dtype='fp32')]
    tool, args = _args(tmp_path)
    assert not any('InferenceSpeedHook' in h['type']
                   for h in tool.build_cfg(args).custom_hooks)


def test_bf16_without_support_is_refused_before_testing(tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported',
                        lambda: False)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    tool, args = _args(tmp_path, '--dtype', 'bf16')
    with pytest.raises(run_config.RunConfigError, match='--dtype bf16.*AVX512-BF16'):
        tool.build_cfg(args)


def test_hook_compiles_once_and_falls_back_without_compiler():
    import torch._inductor.config as inductor_config
    model = tiny_model('seg')
    hook = InferenceSpeedHook(compile=True)
    runner = SimpleNamespace(model=model)
    # inductor's own config.patch (monkeypatch.setattr on the cpp sub-config
    # proxy fails in workers where other tests touched inductor first).
    with inductor_config.patch({'cpp.cxx': ('no-such-c++',)}), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        hook.before_val(runner)
        hook.before_test(runner)
    assert len([w for w in caught
                if issubclass(w.category, CompileFallbackWarning)]) == 1
    with pytest.raises(ValueError, match='fp16'):
        InferenceSpeedHook(dtype='fp16')
