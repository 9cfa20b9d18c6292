"""sort, argsort, kthvalue, masked_select, nonzero, repeat, tile, repeat_interleave, diagonal, diag,
diag_embed, prod, std_mean, var_mean and F.normalize: a float64 gradient and second-gradient check over
hypothesis' shapes, dims and options, the values at known points, and clear errors.  (Values, dtypes
and both gradients against PyTorch, on edge samples, are tests/test_op_registry.py's.)"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
from strategies import nonscalar_shapes, tensors


def dim_of(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


@given(data=st.data(), descending=st.booleans())
def test_sort_and_kthvalue_gradients(data, descending):
    shape = data.draw(nonscalar_shapes)
    n = int(np.prod(shape))  # distinct values 1/8 apart: near a tie the order has no derivative
    x = mt.tensor(np.random.default_rng(data.draw(st.integers(0, 1000))).permutation(n).reshape(shape) / 8 - 1,
                  requires_grad=True)
    dim = dim_of(data.draw, x.ndim)
    f = lambda t: mt.sort(t, dim, descending).values  # noqa: E731
    assert mt.gradcheck(f, [x]) and mt.gradgradcheck(f, [x])
    k = data.draw(st.integers(1, x.shape[dim]))
    assert mt.gradcheck(lambda t: mt.kthvalue(t, k, dim).values, [x])
    np.testing.assert_array_equal(mt.argsort(x, dim, descending).numpy(), mt.sort(x, dim, descending).indices.numpy())


def test_sort_keeps_ties_in_order_both_ways_and_puts_nan_at_the_large_end():
    x = mt.tensor([2.0, float('nan'), 1.0, 2.0, 1.0])
    assert mt.sort(x).indices.tolist() == [2, 4, 0, 3, 1]
    assert mt.sort(x, descending=True).indices.tolist() == [1, 0, 3, 2, 4]
    values, indices = mt.kthvalue(mt.tensor([[3.0, 1.0, 2.0]]), 2)
    assert values.tolist() == [2.0] and indices.tolist() == [2]


@given(data=st.data())
def test_selection_and_repetition_gradients(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    mask = mt.tensor(np.asarray(data.draw(st.lists(st.booleans(), min_size=x.numel(), max_size=x.numel())))
                     .reshape(x.shape))
    assert mt.gradcheck(lambda t: mt.masked_select(t, mask), [x])
    reps = tuple(data.draw(st.integers(0, 2)) for _ in range(x.ndim + data.draw(st.integers(0, 1))))
    assert mt.gradcheck(lambda t: t.repeat(*reps), [x]) and mt.gradcheck(lambda t: mt.tile(t, reps[:1]), [x])
    dim = dim_of(data.draw, x.ndim)
    counts = mt.tensor(np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=x.shape[dim],
                                                     max_size=x.shape[dim]))))
    assert mt.gradcheck(lambda t: mt.repeat_interleave(t, counts, dim), [x])
    assert mt.gradcheck(lambda t: mt.repeat_interleave(t, 2, dim), [x])


def test_repeat_tile_and_repeat_interleave_at_known_points():
    x = mt.tensor([[1, 2], [3, 4]])
    assert x.repeat(1, 2).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert mt.tile(mt.tensor([1, 2]), (2,)).tolist() == [1, 2, 1, 2]
    assert mt.repeat_interleave(x, 2, 0).tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert mt.repeat_interleave(mt.tensor([1, 2, 3]), mt.tensor([2, 0, 1])).tolist() == [1, 1, 3]
    assert mt.nonzero(mt.tensor([[0, 5], [7, 0]])).tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in mt.nonzero(mt.tensor([0, 5, 7]), as_tuple=True)] == [[1, 2]]


@given(data=st.data(), offset=st.integers(-2, 2))
def test_diagonal_and_diag_embed_gradients(data, offset):
    x = data.draw(tensors(data.draw(nonscalar_shapes.filter(lambda s: len(s) >= 2))))
    dim1, dim2 = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=2, max_size=2, unique=True))
    f = lambda t: mt.diagonal(t, offset, dim1, dim2)  # noqa: E731
    assert mt.gradcheck(f, [x]) and mt.gradgradcheck(f, [x])
    g = lambda t: mt.diag_embed(t, offset, 0, -1)  # noqa: E731
    assert mt.gradcheck(g, [x]) and mt.gradgradcheck(g, [x])


def test_diagonals_at_known_points():
    m = mt.tensor([[1, 2, 3], [4, 5, 6]])
    assert mt.diagonal(m).tolist() == [1, 5] and mt.diagonal(m, 1).tolist() == [2, 6] and m.diag(-1).tolist() == [4]
    assert mt.diag(mt.tensor([1, 2]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert mt.diag_embed(mt.tensor([[1, 2]])).tolist() == [[[1, 0], [0, 2]]]


@given(data=st.data())
def test_prod_and_normalize_gradients(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    dim = dim_of(data.draw, x.ndim)
    assert mt.gradcheck(lambda t: t.prod(dim), [x]) and mt.gradgradcheck(lambda t: t.prod(dim), [x])
    assert mt.gradcheck(lambda t: t.prod(), [x])
    assume(np.linalg.norm(x.numpy(), axis=dim).min() > 0.1)  # (a zero vector is at eps's kink)
    assert mt.gradcheck(lambda t: mt.nn.functional.normalize(t, dim=dim), [x])


def test_prod_is_exact_with_zeros_and_multiplies_integers_in_int64():
    x = mt.tensor([[0.0, 2.0, 3.0], [2.0, 0.0, 0.0]], requires_grad=True)
    x.prod(1).sum().backward()
    assert x.grad.tolist() == [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0]]  # the product of the others, never 0/0
    assert mt.tensor([[200, 200]], dtype=mt.uint8).prod(1).tolist() == [40000]
    y = mt.tensor([math.inf, 2.0], requires_grad=True)  # an inf first: the others' product is still 2
    y.prod().backward()
    assert y.grad.tolist() == [2.0, math.inf]
    std, mean = mt.std_mean(mt.tensor([[1.0, 3.0]]), 1)
    assert mean.tolist() == [2.0] and std.tolist() == [pytest.approx(2 ** 0.5)]


@pytest.mark.parametrize('call, error, message', [
    (lambda: mt.ones(2, 3).repeat(2), mt.ShapeError, r'repeat: 1 counts for a tensor of 2 dims'),
    (lambda: mt.kthvalue(mt.ones(3), 4), mt.ShapeError, r'kthvalue: k=4 is not between 1 and the 3 entries'),
    (lambda: mt.diagonal(mt.ones(3)), IndexError, r'diagonal: needs a tensor of at least 2 dims'),
    (lambda: mt.diagonal(mt.ones(2, 2), 0, 1, 1), ValueError, r'diagonal: dim1 and dim2 must be two different'),
    (lambda: mt.masked_select(mt.ones(2, 3), mt.ones(2, 3)), mt.DTypeError, r'masked_select: mask must be a bool'),
    (lambda: mt.repeat_interleave(mt.ones(3), mt.tensor([1, 2])), mt.ShapeError, r'repeat_interleave: repeats must'),
    (lambda: mt.prod(mt.ones(2, 3), (0, 1)), TypeError, r'prod takes one dim'),
])
def test_bad_input_is_refused_saying_what_to_do(call, error, message):
    with pytest.raises(error, match=message):
        call()
