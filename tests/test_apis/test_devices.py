"""--device values are checked before any work, with a clear error."""
import pytest
import torch

from sapiens2_mm.runtime.devices import check_device


def test_cpu_passes():
    assert check_device('cpu') == torch.device('cpu')


@pytest.mark.parametrize('name', ['gpu', 'cuda:x', 'foo:1'])
def test_unknown_names(name):
    with pytest.raises(ValueError, match=f"Unknown device '{name}'"):
        check_device(name)


def test_cuda_that_is_not_there(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    with pytest.raises(ValueError, match='no CUDA GPU is available.*cpu'):
        check_device('cuda:0')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 2)
    with pytest.raises(ValueError, match='has 2 CUDA GPU.*cuda:1'):
        check_device('cuda:5')
    assert check_device('cuda:1') == torch.device('cuda:1')


def test_unsupported_type():
    with pytest.raises(ValueError, match="'meta' is not supported"):
        check_device('meta')
