"""cummax, cummin, logcumsumexp, meshgrid, Tensor.unfold and pad's copying modes: a float64 gradient
check over hypothesis' shapes and options, values at known points (ties and nan as PyTorch's), and
clear errors.  (Values, dtypes and both gradients against PyTorch, on edge samples, are
tests/test_op_registry.py's.)"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from strategies import nonscalar_shapes, tensors


@given(data=st.data())
def test_scan_gradients(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert mt.gradcheck(lambda t: mt.logcumsumexp(t, dim), [x]) and mt.gradgradcheck(lambda t: t.logcumsumexp(dim), [x])
    # distinct values 1/8 apart: near a tie the running extreme's place has no derivative
    x = mt.tensor(np.random.default_rng(data.draw(st.integers(0, 1000))).permutation(x.numel()).reshape(x.shape) / 8,
                  requires_grad=True)
    assert mt.gradcheck(lambda t: mt.cummax(t, dim).values, [x]) and mt.gradcheck(lambda t: t.cummin(dim).values, [x])


def test_running_extremes_keep_the_later_tie_and_let_nan_win():
    values, indices = mt.cummax(mt.tensor([1.0, 3.0, 3.0, 2.0, math.nan, 5.0]), 0)
    assert indices.tolist() == [0, 1, 2, 2, 4, 4] and math.isnan(values.tolist()[-1])
    assert mt.cummin(mt.tensor([2, 1, 1, 3]), 0).indices.tolist() == [0, 1, 2, 2]
    assert mt.logcumsumexp(mt.tensor([1000.0, 1000.0]), 0).tolist() == [1000.0, pytest.approx(1000 + math.log(2))]


@given(data=st.data())
def test_unfold_and_pad_gradients(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    dim = data.draw(st.integers(0, x.ndim - 1))
    size = data.draw(st.integers(0, x.shape[dim]))
    step = data.draw(st.integers(1, 3))
    assert mt.gradcheck(lambda t: t.unfold(dim, size, step), [x])
    assume(x.ndim >= 2)
    mode = data.draw(st.sampled_from(['reflect', 'replicate', 'circular']))
    n = x.shape[-1]
    widths = data.draw(st.tuples(*[st.integers(0, n - 1 if mode == 'reflect' else n)] * 2))
    assert mt.gradcheck(lambda t: mt.pad(t, widths, mode), [x])


def test_meshgrid_unfold_and_pad_at_known_points():
    a, b = mt.meshgrid(mt.tensor([1, 2, 3]), mt.tensor([4, 5]), indexing='ij')
    assert a.tolist() == [[1, 1], [2, 2], [3, 3]] and b.tolist() == [[4, 5], [4, 5], [4, 5]]
    assert mt.meshgrid(mt.tensor([1, 2, 3]), mt.tensor([4, 5]), indexing='xy')[0].shape == (2, 3)
    assert mt.arange(6).unfold(0, 3, 2).tolist() == [[0, 1, 2], [2, 3, 4]]
    row = mt.tensor([[1, 2, 3, 4]])
    assert mt.pad(row, (2, 1), 'reflect').tolist() == [[3, 2, 1, 2, 3, 4, 3]]
    assert mt.pad(row, (2, 1), 'replicate').tolist() == [[1, 1, 1, 2, 3, 4, 4]]
    assert mt.pad(row, (2, 1), 'circular').tolist() == [[3, 4, 1, 2, 3, 4, 1]]


@pytest.mark.parametrize('call, error, message', [
    (lambda: mt.logcumsumexp(mt.tensor([1, 2]), 0), mt.DTypeError, r'logcumsumexp: needs a float tensor'),
    (lambda: mt.ones(2, 3).unfold(1, 4, 1), mt.ShapeError, r'unfold: size 4 is more than the 3 entries'),
    (lambda: mt.meshgrid(mt.ones(2, 2)), mt.ShapeError, r'meshgrid: each tensor must be 0-d or 1-d'),
    (lambda: mt.meshgrid(mt.ones(2), indexing='yx'), ValueError, r"meshgrid: indexing must be 'ij' or 'xy'"),
    (lambda: mt.pad(mt.ones(2, 3, 4, 5), (1, 1), 'reflect'), NotImplementedError, r"pad: mode 'reflect' pads the last"),
    (lambda: mt.pad(mt.ones(1, 3), (0, 4), 'circular'), ValueError, r"pad: mode 'circular' needs widths <="),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
