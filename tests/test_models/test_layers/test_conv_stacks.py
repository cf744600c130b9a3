"""Head conv stacks: official key indices, exact x2 upsampling, errors."""
import pytest
import torch

from sapiens2_mm.models.layers.conv_stacks import build_conv_stack, build_deconv_stack


@pytest.mark.parametrize('kernel', [2, 3, 4])
def test_deconv_doubles_size(kernel):
    stack = build_deconv_stack(8, [6, 4], [kernel, kernel])
    out = stack(torch.randn(1, 8, 5, 7))
    assert out.shape == (1, 4, 20, 28)
    assert [k for k in stack.state_dict()] == ['0.weight', '3.weight']


def test_conv_stack_keeps_size_and_has_biases():
    stack = build_conv_stack(8, [6, 4], [1, 3])
    assert stack(torch.randn(1, 8, 5, 7)).shape == (1, 4, 5, 7)
    assert list(stack.state_dict()) == ['0.weight', '0.bias', '3.weight', '3.bias']


def test_errors():
    with pytest.raises(ValueError, match='kernel size 5 is not supported'):
        build_deconv_stack(8, [4], [5])
    with pytest.raises(ValueError, match='same length'):
        build_deconv_stack(8, [4, 4], [4])
    with pytest.raises(ValueError, match='must be odd'):
        build_conv_stack(8, [4], [2])
