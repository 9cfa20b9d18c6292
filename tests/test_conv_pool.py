"""Convolution (im2col, one matrix product, col2im) and pooling: a float64 gradient and second-gradient
check over hypothesis' sizes and options, the textbook's pieces (fold is unfold's adjoint), the layers,
and clear errors.  (Values, dtypes and both gradients against PyTorch, with every option, are
tests/test_op_registry.py's.)"""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import microtensor as mt
from microtensor import nn
from microtensor.nn import functional as F


@settings(max_examples=15, deadline=None)
@given(spatial=st.integers(1, 3), data=st.data())
def test_convolution_gradients(spatial, data):
    groups = data.draw(st.sampled_from([1, 2]))
    C, O = 2 * groups, 2 * groups
    kernel = tuple(data.draw(st.integers(1, 3)) for _ in range(spatial))
    stride = tuple(data.draw(st.integers(1, 2)) for _ in range(spatial))
    dilation = tuple(data.draw(st.integers(1, 2)) for _ in range(spatial))
    padding = tuple(data.draw(st.integers(0, 1)) for _ in range(spatial))
    size = tuple(data.draw(st.integers(d * (k - 1) + 1, 5)) for k, d in zip(kernel, dilation))
    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    x = mt.tensor(rng.standard_normal((1, C) + size), requires_grad=True)
    w = mt.tensor(rng.standard_normal((O, C // groups) + kernel), requires_grad=True)
    b = mt.tensor(rng.standard_normal(O), requires_grad=True)
    conv = getattr(F, f'conv{spatial}d')
    f = lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups)  # noqa: E731
    assert mt.gradcheck(f, [x, w, b]) and mt.gradgradcheck(f, [x, w, b])


def test_fold_is_unfolds_adjoint_and_counts_the_overlaps():
    """<unfold(x), c> = <x, fold(c)> for any x and c: col2im is im2col's transpose."""
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((2, 3, 6, 5)))
    cols = F.unfold(x, (3, 2), padding=1, stride=(2, 1))
    c = mt.tensor(rng.standard_normal(cols.shape))
    assert (cols * c).sum().item() == pytest.approx((x * F.fold(c, (6, 5), (3, 2), padding=1, stride=(2, 1))).sum().item())
    overlaps = F.fold(F.unfold(mt.ones(1, 1, 3, 3), 2), (3, 3), 2)
    assert overlaps.reshape(3, 3).tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]


def test_a_patch_embedding_is_a_strided_convolution():
    """A ViT's patches: conv2d with stride = kernel = p is one Linear of each flattened p x p patch."""
    rng = np.random.default_rng(1)
    x, w = mt.tensor(rng.standard_normal((1, 3, 8, 8))), mt.tensor(rng.standard_normal((5, 3, 4, 4)))
    patches = F.unfold(x, 4, stride=4)                                           # (1, 48, 4)
    np.testing.assert_allclose(F.conv2d(x, w, stride=4).reshape(1, 5, 4).numpy(),
                               (w.reshape(5, 48) @ patches).numpy(), rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), ceil_mode=st.booleans())
def test_pooling_gradients(data, ceil_mode):
    kernel = data.draw(st.integers(1, 3))
    padding = data.draw(st.integers(0, kernel // 2))
    stride = data.draw(st.integers(1, 2))
    size = tuple(data.draw(st.integers(kernel, 6)) for _ in range(2))
    values = np.random.default_rng(data.draw(st.integers(0, 100))).permutation(4 * size[0] * size[1])
    x = mt.tensor(values.reshape((1, 4) + size) / 7.0, requires_grad=True)  # distinct: no tie for the max
    assert mt.gradcheck(lambda t: F.max_pool2d(t, kernel, stride, padding, ceil_mode=ceil_mode), [x])
    include_pad = data.draw(st.booleans())
    f = lambda t: F.avg_pool2d(t, kernel, stride, padding, ceil_mode, count_include_pad=include_pad)  # noqa: E731
    assert mt.gradcheck(f, [x]) and mt.gradgradcheck(f, [x])


def test_max_pool_indices_are_flat_positions_in_the_input():
    x = mt.tensor([[[[1.0, 5.0, 2.0], [4.0, 3.0, 9.0]]]])
    values, indices = F.max_pool2d(x, 2, stride=1, return_indices=True)
    assert values.tolist() == [[[[5.0, 9.0]]]] and indices.tolist() == [[[[1, 5]]]]


def test_the_layers_hold_pytorchs_parameters_and_call_the_functions():
    conv = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 2) and conv.bias.shape == (6,)
    assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(2 * 3 * 2)  # PyTorch's bound, 1/sqrt(fan_in)
    x = mt.randn(2, 4, 7, 5)
    np.testing.assert_array_equal(conv(x).numpy(), F.conv2d(x, conv.weight, conv.bias, 2, 1, 1, 2).numpy())
    assert nn.Conv1d(3, 2, 4, bias=False)(mt.randn(3, 9)).shape == (2, 6)  # no batch dim
    assert nn.Conv3d(1, 2, 2)(mt.randn(1, 1, 3, 3, 3)).shape == (1, 2, 2, 2, 2)
    assert nn.MaxPool2d(2)(x).shape == (2, 4, 3, 2) and nn.AvgPool2d(3, stride=1, padding=1)(x).shape == x.shape
    assert nn.AvgPool3d(2)(mt.randn(1, 1, 4, 4, 4)).shape == (1, 1, 2, 2, 2)


@pytest.mark.parametrize('call, error, message', [
    (lambda: F.conv2d(mt.ones(1, 3, 5, 5), mt.ones(4, 2, 3, 3)), mt.ShapeError, r'conv2d: weight \(4, 2, 3, 3\) does not fit'),
    (lambda: F.conv2d(mt.ones(1, 2, 2, 2), mt.ones(1, 2, 3, 3)), mt.ShapeError, r'conv2d: .* no window fits'),
    (lambda: F.conv2d(mt.ones(2, 5), mt.ones(1, 2, 1, 1)), mt.ShapeError, r'conv2d: input must be \(N, C, H, W\)'),
    (lambda: F.conv2d(mt.ones(1, 1, 3, 3), mt.ones(1, 1, 2, 2), stride=2, padding='same'), ValueError,
     r"padding='same' needs stride 1"),
    (lambda: F.max_pool2d(mt.ones(1, 1, 4, 4), 2, padding=2), mt.ShapeError, r'padding \(2, 2\) must be at most half'),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, r'Conv2d: in_channels \(3\) and out_channels \(4\) must both'),
    (lambda: F.unfold(mt.ones(1, 3, 4), 2), mt.ShapeError, r'unfold: input must'),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
