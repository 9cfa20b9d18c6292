"""Reductions sum, mean, var, std, amax, amin: forward equals numpy and backward passes a
gradient check for dim None / int / tuple / negative, keepdim, size-1 and empty axes.
(max(dim) and min(dim), which return (values, indices), are in test_torch_semantics.py.)"""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from strategies import assert_forward, axes, devices, distinct_tensors, tensors

SMOOTH = {  # name: (microtensor, numpy), each called as (x, dim, keepdim)
    'sum': (mt.sum, np.sum),
    'mean': (mt.mean, np.mean),
    'var biased': (lambda x, dim, keepdim: mt.var(x, dim, keepdim=keepdim, correction=0), np.var),
}
KINKED = {'amax': (mt.amax, np.max), 'amin': (mt.amin, np.min),  # (std: a kink where all values are equal)
          'std biased': (lambda x, dim, keepdim: mt.std(x, dim, keepdim=keepdim, correction=0), np.std)}


def dims(draw_axes):
    """A reduction's dim from strategies.axes, without (): PyTorch and numpy read an empty tuple differently."""
    return None if draw_axes == () else draw_axes


@devices
@pytest.mark.parametrize('name', SMOOTH)
@given(data=st.data(), keepdims=st.booleans())
def test_smooth_reductions(device, name, data, keepdims):
    op, reference = SMOOTH[name]
    x = data.draw(tensors(device=device))
    axis = dims(data.draw(axes(x.ndim)))
    assert_forward(op(x, axis, keepdims), reference(x.numpy(), axis=axis, keepdims=keepdims))
    assert mt.gradcheck(lambda t: op(t, axis, keepdims), [x])


@devices
@pytest.mark.parametrize('name', KINKED)
@given(data=st.data(), keepdims=st.booleans())
def test_max_min(device, name, data, keepdims):
    op, reference = KINKED[name]
    x = data.draw(distinct_tensors(device=device))  # no ties: the winner is unique
    axis = dims(data.draw(axes(x.ndim)))
    assert_forward(op(x, axis, keepdims), reference(x.numpy(), axis=axis, keepdims=keepdims))
    assert mt.gradcheck(lambda t: op(t, axis, keepdims), [x])


@devices
@given(data=st.data(), keepdims=st.booleans())
def test_var_unbiased(device, data, keepdims):
    x = data.draw(distinct_tensors(device=device))
    axis = dims(data.draw(axes(x.ndim)))
    n = x.numel() // np.sum(x.numpy(), axis=axis).size  # elements per variance
    assume(n > 1)
    assert_forward(x.var(axis, keepdim=keepdims), np.var(x.numpy(), axis=axis, keepdims=keepdims, ddof=1))
    assert mt.gradcheck(lambda t: t.var(axis, keepdim=keepdims), [x])
    assert mt.gradcheck(lambda t: t.std(axis, keepdim=keepdims), [x])


@given(data=st.data(), keepdims=st.booleans())
def test_var_second_derivatives(data, keepdims):
    x = data.draw(tensors())
    axis = dims(data.draw(axes(x.ndim)))
    assert mt.gradgradcheck(lambda t: t.var(axis, keepdim=keepdims, correction=0), [x])


def test_max_ties_split_the_gradient_evenly():
    x = mt.tensor(np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]]), requires_grad=True)
    x.amax(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]])


@pytest.mark.parametrize('name', ['sum', 'mean', 'var biased', 'std biased', 'amax', 'amin'])
def test_size_one_axes(name):
    op, reference = {**SMOOTH, **KINKED}[name]
    x = mt.tensor(np.array([[[0.3], [-1.2], [2.0]]]), requires_grad=True)  # shape (1, 3, 1)
    for axis in [0, 2, (0, 2), -1]:
        for keepdims in [False, True]:
            assert_forward(op(x, axis, keepdims), reference(x.numpy(), axis=axis, keepdims=keepdims))
            assert mt.gradcheck(lambda t: op(t, axis, keepdims), [x])


def test_sum_over_an_empty_axis_is_zero():
    x = mt.tensor(np.zeros((0, 3)), requires_grad=True)
    y = x.sum(axis=0)
    assert_forward(y, np.zeros(3))
    (y * mt.tensor(np.arange(3.0))).sum().backward()
    assert x.grad.shape == (0, 3)
    z = mt.tensor(np.zeros((2, 0)), requires_grad=True)
    z.sum(axis=1, keepdims=True).sum().backward()
    assert_forward(z.grad, np.zeros((2, 0)))


def test_mean_over_an_empty_axis_is_nan():
    x = mt.tensor(np.zeros((0, 3)))
    assert np.isnan(x.mean(axis=0).numpy()).all() and x.mean(axis=0).shape == (3,)


@pytest.mark.parametrize('name, message', [('amax', 'Max: .*'), ('amin', 'Min: .*'), ('max', 'max: dim 0 of shape '),
                                           ('min', 'min: dim 0 of shape ')])
def test_max_over_an_empty_axis_is_a_clear_error(name, message):
    x = mt.tensor(np.zeros((0, 3)), requires_grad=True)
    with pytest.raises(IndexError, match=message + r"\(0, 3\).*empty"):  # PyTorch's class
        getattr(x, name)(dim=0)
    out = getattr(x, name)(dim=1)  # the empty axis is not reduced: fine
    assert_forward(out if name.startswith('a') else out.values, np.zeros(0))


def test_scalar_tensors_through_reductions():
    x = mt.tensor(np.float64(1.5), requires_grad=True)
    for op in [mt.sum, mt.mean, mt.amax, mt.amin, lambda t, dim: mt.var(t, dim, correction=0),
               lambda t, dim: mt.max(t, dim) if dim is None else mt.max(t, dim).values]:
        for axis in [None, 0, -1]:  # a 0-d tensor reduces over dim 0 or -1, as in PyTorch
            y = op(x, axis)
            assert y.shape == ()
            assert mt.gradcheck(lambda t: op(t, axis), [x])
    y = x.sum(keepdims=True)
    assert y.shape == ()
