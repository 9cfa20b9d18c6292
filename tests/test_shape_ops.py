"""PyTorch's shape family: permute, expand, clone, contiguous, chunk, flatten, unflatten.
Forward equals numpy, backward passes a gradient check, and bad arguments give clear errors
(test_torch_semantics.py compares the same ops with torch)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import assert_forward, devices, nonscalar_shapes, tensors


def check(f, reference, x):
    assert_forward(f(x), reference(x.numpy()))
    assert mt.gradcheck(f, [x])


@devices
@given(data=st.data())
def test_permute(device, data):
    x = data.draw(tensors(device=device))
    order = tuple(data.draw(st.permutations(range(x.ndim))))
    check(lambda t: t.permute(*order), lambda a: a.transpose(order), x)
    check(lambda t: mt.permute(t, order), lambda a: a.transpose(order), x)


@devices
@given(data=st.data())
def test_transpose_of_two_dims_swaps_them(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    d0, d1 = data.draw(st.integers(-x.ndim, x.ndim - 1)), data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: t.transpose(d0, d1), lambda a: np.swapaxes(a, d0, d1), x)


def test_transpose_of_a_matrix_with_0_1_swaps_rows_and_columns():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    assert x.transpose(0, 1).shape == (3, 2) and x.transpose(0, 1).tolist() == x.T.tolist()
    assert x.transpose().shape == (3, 2)  # numpy's x.transpose(): all dims reversed
    assert mt.zeros(2, 3, 4).transpose(2, 0, 1).shape == (4, 2, 3)  # three dims: a permutation, as numpy


@devices
@given(data=st.data())
def test_expand(device, data):
    x = data.draw(tensors(device=device))
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    sizes = lead + [data.draw(st.sampled_from([-1, n] + [3] * (n == 1))) for n in x.shape]
    target = tuple(lead) + tuple(n if s == -1 else s for n, s in zip(x.shape, sizes[len(lead):]))
    check(lambda t: t.expand(*sizes), lambda a: np.broadcast_to(a, target), x)


@devices
@given(data=st.data())
def test_clone_and_contiguous(device, data):
    x = data.draw(tensors(device=device))
    check(lambda t: t.clone(), lambda a: a.copy(), x)
    check(lambda t: t.T.contiguous(), lambda a: a.T.copy(), x)
    y = x.clone()
    assert y is not x and not np.shares_memory(y.numpy(), x.detach().numpy())
    assert x.detach().contiguous() is not None and mt.zeros(2, 3).contiguous().shape == (2, 3)
    c = mt.zeros(2, 3)
    assert c.contiguous() is c  # already C-ordered: itself, as in PyTorch


@devices
@given(data=st.data())
def test_chunk(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.integers(1, 5))
    size = x.shape[dim]
    step = -(-size // n)
    pieces = x.chunk(n, dim)
    expected = np.split(x.numpy(), list(range(step, size, step)), axis=dim)
    assert len(pieces) == len(expected) <= n
    for p, e in zip(pieces, expected):
        assert_forward(p, e)
    assert mt.gradcheck(lambda t: tuple(t.chunk(n, dim)), [x])


def test_chunk_follows_torchs_rule_for_uneven_sizes():
    assert [p.shape[0] for p in mt.arange(5).chunk(4)] == [2, 2, 1]  # ceil(5 / 4) each: 3 pieces, not 4
    assert [p.shape[0] for p in mt.arange(10).chunk(4)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in mt.zeros(0).chunk(3)] == [0, 0, 0]


@devices
@given(data=st.data())
def test_flatten(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    start = data.draw(st.integers(0, x.ndim - 1))
    end = data.draw(st.integers(start, x.ndim - 1))
    merged = x.shape[:start] + (int(np.prod(x.shape[start:end + 1])),) + x.shape[end + 1:]
    check(lambda t: t.flatten(start, end), lambda a: a.reshape(merged), x)
    check(lambda t: t.flatten(start - x.ndim, end - x.ndim), lambda a: a.reshape(merged), x)
    check(lambda t: t.flatten(), lambda a: a.reshape(-1), x)
    assert mt.tensor(2.0).flatten().shape == (1,)  # a 0-d tensor flattens to one element


@devices
@given(data=st.data())
def test_unflatten(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[dim]
    f = data.draw(st.sampled_from([f for f in range(1, n + 1) if n % f == 0]))
    sizes = data.draw(st.sampled_from([(f, n // f), (f, -1), (-1, f), (1, n, 1)]))
    d = dim % x.ndim
    target = x.shape[:d] + tuple(n // f if s == -1 else s for s in sizes) + x.shape[d + 1:]
    check(lambda t: t.unflatten(dim, sizes), lambda a: a.reshape(target), x)


@given(x=tensors())
def test_flatten_then_unflatten_is_the_identity(x):
    if x.ndim:
        assert_forward(x.flatten(0, -1).unflatten(0, x.shape), x.numpy())


@pytest.mark.parametrize('call, error, pattern', [
    (lambda: mt.zeros(2, 3).permute(0), ValueError, r"permute: dims \(0,\) are not a permutation .*\(2, 3\)"),
    (lambda: mt.zeros(2, 3).permute(0, 0), ValueError, r"permute: dims \(0, 0\) are not a permutation"),
    (lambda: mt.zeros(2, 3).permute(0, 2), IndexError, r"permute: axis 2 is out of range .*\(2, 3\)"),
    (lambda: mt.zeros(2, 3).transpose(1), TypeError, r"transpose: takes two dims to swap .*permute"),
    (lambda: mt.zeros(3).mT, ValueError, r"mT: needs a tensor of at least 2 dimensions.*\(3,\)"),
    (lambda: mt.zeros(2, 3).expand(4, 3), ValueError, r"expand: a tensor of shape \(2, 3\) cannot expand to \(4, 3\)"),
    (lambda: mt.zeros(2, 3).expand(3), ValueError, r"expand: 1 sizes \(3,\) for a tensor of shape \(2, 3\)"),
    (lambda: mt.zeros(3).expand(-1, 3), ValueError, r"expand: .*a new leading dim cannot be -1"),
    (lambda: mt.zeros(3).expand(2.0, 3), TypeError, r"expand: each size must be an integer"),
    (lambda: mt.zeros(6).chunk(0), ValueError, r"chunk: chunks must be an integer >= 1, not 0"),
    (lambda: mt.zeros(6).chunk(2, dim=1), IndexError, r"chunk: axis 1 is out of range"),
    (lambda: mt.zeros(2, 3, 4).flatten(2, 1), ValueError, r"flatten: start_dim 2 comes after end_dim 1"),
    (lambda: mt.zeros(2, 6).unflatten(1, (4, -1)), ValueError, r"unflatten: dim 1 of size 6 .* cannot be split"),
    (lambda: mt.zeros(2, 6).unflatten(1, (4, 2)), ValueError, r"unflatten: sizes \(4, 2\) multiply to 8, but dim 1"),
    (lambda: mt.zeros(2, 6).unflatten(1, ()), ValueError, r"unflatten: sizes must name at least one size"),
    (lambda: mt.zeros(5).split([1, 2]), ValueError, r"split: sizes \[1, 2\] add up to 3, but dim 0 .*numpy"),
    (lambda: mt.zeros(5).split(0), ValueError, r"split: chunks of size 0 cannot cover .* chunk"),
])
def test_clear_errors(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_shape_mismatches_of_the_shape_family_are_shape_errors():
    for call in [lambda: mt.zeros(2, 3).permute(1, 1), lambda: mt.zeros(2, 3).expand(4, 3),
                 lambda: mt.zeros(2, 6).unflatten(1, (4, 2)), lambda: mt.zeros(5).split([1, 2])]:
        with pytest.raises(mt.ShapeError):
            call()


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
def test_size_is_a_method_and_numel_counts_the_elements(shape):
    x = mt.zeros(*shape)
    assert x.size() == shape and [x.size(d) for d in range(-len(shape), len(shape))] == list(shape) * 2
    assert x.numel() == int(np.prod(shape)) == mt.numel(x)
    with pytest.raises(IndexError, match="size: axis"):
        x.size(len(shape))
