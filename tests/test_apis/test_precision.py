"""--dtype: bf16 autocast numerics, and clear errors where bf16 is missing."""
import os.path as osp

import infer
import pytest
import torch

from sapiens2_mm.runtime.precision import (
    bf16_problem,
    check_dtype,
    set_inference_dtype,
)
from tests.conftest import COCO_DIR
from tests.test_apis.tiny_configs import tiny_config, tiny_model


def test_unknown_dtype_is_named():
    with pytest.raises(ValueError, match=r"fp16.*\['bf16', 'fp32'\]|"
                       r"\['bf16', 'fp32'\].*fp16"):
        check_dtype('fp16')


def test_bf16_on_gpu_without_bf16_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported',
                        lambda including_emulation=True: False)
    monkeypatch.setattr(torch.cuda, 'get_device_name',
                        lambda device=None: 'Tesla V100')
    with pytest.raises(ValueError) as err:
        check_dtype('bf16', 'cuda')
    message = str(err.value)
    assert 'Tesla V100' in message and 'compute capability' in message
    assert '--dtype fp32' in message


def test_bf16_on_cpu_without_bf16_instructions(monkeypatch):
    monkeypatch.setattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported',
                        lambda: False)
    assert 'AVX512-BF16' in bf16_problem('cpu')
    with pytest.raises(ValueError, match='emulated'):
        check_dtype('bf16', 'cpu')
    # Benchmarks may still measure the emulated case on purpose.
    assert check_dtype('bf16', 'cpu', allow_emulated=True) == torch.bfloat16


def test_bf16_autocast_is_close_to_fp32_and_returns_fp32():
    torch.manual_seed(0)
    model = tiny_model('pose')
    x = torch.randn(2, 3, 128, 96)
    with torch.no_grad():
        ref = model.head(model.extract_feat(x))
        set_inference_dtype(model, 'bf16', allow_emulated=True)
        out = model.head(model.extract_feat(x))
        with torch.autocast('cpu', dtype=torch.bfloat16):
            manual = model.head.forward.eager(model.backbone.forward.eager(x))
    assert out.dtype == torch.float32
    rel = ((out - ref).norm() / ref.norm()).item()
    # bf16 has an 8-bit mantissa (2**-8 = 3.9e-3 relative rounding).
    assert 1e-4 < rel < 5e-2
    assert torch.allclose(out, manual.float(), atol=1e-2 * ref.abs().max())


def test_infer_cli_bf16_without_support_fails_before_any_frame(
        monkeypatch, tmp_path):
    monkeypatch.setattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported',
                        lambda: False)
    out = tmp_path / 'out'
    with pytest.raises(ValueError, match='--dtype bf16'):
        infer.main(['seg', tiny_config('seg'), '--input',
                    osp.join(COCO_DIR, '000000000785.jpg'), '--output',
                    str(out), '--dtype', 'bf16'])
    assert not list(out.glob('*.npy'))
