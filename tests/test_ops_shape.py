"""Shape ops (reshape, permute, transpose, .T, swapaxes, expand_dims, squeeze, broadcast_to,
indexing, concatenate, stack, split): forward equals numpy, backward passes a gradient check.
(expand, flatten, unflatten, clone, contiguous and chunk: test_shape_ops.py.)"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import assert_forward, broadcastable_shapes, devices, nonscalar_shapes, shapes, tensors


def check(op, reference, x):
    """forward equals the numpy reference, backward passes gradcheck."""
    assert_forward(op(x), reference(x.numpy()))
    assert mt.gradcheck(op, [x])


# ---------------------------------------------------------------------------- reshaping
@devices
@given(data=st.data())
def test_reshape(device, data):
    x = data.draw(tensors(device=device))
    target = data.draw(st.sampled_from([(-1,), x.shape[::-1], (1,) + x.shape, (x.numel(), 1), (-1, 1)]))
    check(lambda t: t.reshape(target), lambda a: a.reshape(target), x)
    check(lambda t: t.reshape(*target), lambda a: a.reshape(target), x)
    check(lambda t: t.flatten(), lambda a: a.reshape(-1), x)


@devices
@given(data=st.data())
def test_transpose(device, data):
    x = data.draw(tensors(device=device))
    axes = tuple(data.draw(st.permutations(range(x.ndim))))
    check(lambda t: t.permute(*axes), lambda a: a.transpose(axes), x)
    check(lambda t: mt.transpose(t, axes), lambda a: a.transpose(axes), x)  # a tuple: a permutation, as numpy
    check(lambda t: t.T, lambda a: a.T, x)
    negative = tuple(a - x.ndim for a in axes)
    check(lambda t: t.transpose(negative), lambda a: a.transpose(negative), x)


@devices
@given(data=st.data())
def test_swapaxes(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    axis = st.integers(-x.ndim, x.ndim - 1)
    a1, a2 = data.draw(axis), data.draw(axis)
    check(lambda t: t.swapaxes(a1, a2), lambda a: a.swapaxes(a1, a2), x)
    check(lambda t: t.transpose(a1, a2), lambda a: a.swapaxes(a1, a2), x)  # two dims: PyTorch's swap


@devices
@given(data=st.data())
def test_expand_dims(device, data):
    x = data.draw(tensors(device=device))
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(lambda t: t.expand_dims(axis), lambda a: np.expand_dims(a, axis), x)
    check(lambda t: t.unsqueeze(axis), lambda a: np.expand_dims(a, axis), x)


@devices
@given(data=st.data())
def test_squeeze(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=2))
    x = data.draw(tensors(shape, device=device))
    ones = [i for i, n in enumerate(shape) if n == 1]
    chosen = data.draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    chosen = [a - x.ndim if data.draw(st.booleans()) else a for a in chosen]
    axis = data.draw(st.sampled_from([None, tuple(chosen)] + ([chosen[0]] if chosen else [])))
    check(lambda t: t.squeeze(axis), lambda a: np.squeeze(a, axis), x)


@devices
@given(data=st.data())
def test_broadcast_to(device, data):
    x_shape, other = data.draw(broadcastable_shapes())
    target = np.broadcast_shapes(x_shape, other)
    x = data.draw(tensors(x_shape, device=device))
    check(lambda t: t.broadcast_to(target), lambda a: np.broadcast_to(a, target), x)


# ---------------------------------------------------------------------------- indexing
@devices
@given(data=st.data())
def test_basic_indexing(device, data):
    """Slices (negative steps too), ints, None, Ellipsis."""
    x = data.draw(tensors(device=device))
    index = data.draw(hnp.basic_indices(x.shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    check(lambda t: t[index], lambda a: a[index], x)


@devices
@given(data=st.data())
def test_integer_array_indexing(device, data):
    """Integer arrays, with repeated and negative indices: the gradients of repeats add up."""
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    index = data.draw(hnp.integer_array_indices(x.shape, result_shape=hnp.array_shapes(max_dims=2, max_side=5)))
    on_device = tuple(mt.tensor(i, device=device) for i in index)  # index arrays live where x does
    check(lambda t: t[on_device], lambda a: a[index], x)
    check(lambda t: t[on_device[0]], lambda a: a[index[0]], x)  # one Tensor index
    if device == 'cpu':
        check(lambda t: t[index], lambda a: a[index], x)  # numpy arrays


@devices
@given(data=st.data())
def test_boolean_mask_indexing(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    mask = data.draw(hnp.arrays(bool, x.shape))
    rows = data.draw(hnp.arrays(bool, x.shape[:1]))
    check(lambda t: t[mt.tensor(mask, device=device)], lambda a: a[mask], x)
    check(lambda t: t[mt.tensor(rows, device=device)], lambda a: a[rows], x)


def test_repeated_and_mixed_indices_accumulate():
    x = mt.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    x[[0, 0, 2], 1:3].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 2, 0], [0, 0, 0, 0], [0, 1, 1, 0]])
    y = mt.tensor(np.arange(5.0), requires_grad=True)
    check(lambda t: t[::-2], lambda a: a[::-2], y)
    check(lambda t: t[[4, -1, 0, 4]], lambda a: a[[4, -1, 0, 4]], y)
    check(lambda t: t[..., None, 3], lambda a: a[..., None, 3], y)


# ---------------------------------------------------------------------------- joining and splitting
@st.composite
def pieces(draw, device):
    """1-3 tensors that agree on every axis but `axis`, and that axis."""
    shape = draw(nonscalar_shapes)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = [draw(tensors(shape[:axis % len(shape)] + (n,) + shape[axis % len(shape) + 1:], device=device))
             for n in sizes]
    return parts, axis


@devices
@given(data=st.data())
def test_concatenate(device, data):
    parts, axis = data.draw(pieces(device))
    assert_forward(mt.concatenate(parts, axis), np.concatenate([p.numpy() for p in parts], axis))
    assert mt.gradcheck(lambda *ts: mt.concatenate(ts, axis=axis), parts)


@devices
@given(data=st.data(), n=st.integers(1, 3))
def test_stack(device, data, n):
    shape = data.draw(shapes)
    parts = [data.draw(tensors(shape, device=device)) for _ in range(n)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert_forward(mt.stack(parts, axis), np.stack([p.numpy() for p in parts], axis))
    assert mt.gradcheck(lambda *ts: mt.stack(ts, axis=axis), parts)


@devices
@given(data=st.data())
def test_split(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    size = x.shape[axis]
    sections = data.draw(st.one_of(st.integers(1, size + 1), st.lists(st.integers(0, size), max_size=3).map(sorted)))
    if isinstance(sections, int):  # chunks of that size, the last maybe smaller (PyTorch's split)
        cuts = list(range(sections, size, sections))
    else:  # a list of sizes adding up to the axis: here the gaps between sorted cuts
        cuts, sections = sections, [b - a for a, b in zip([0] + sections, sections + [size])]
    outs = mt.split(x, sections, axis)
    expected = np.split(x.numpy(), cuts, axis)
    assert len(outs) == len(expected)
    for out, e in zip(outs, expected):
        assert_forward(out, e)
    assert mt.gradcheck(lambda t: tuple(mt.split(t, sections, axis)), [x])


def test_split_parts_that_are_unused_get_zero_gradient():
    x = mt.tensor(np.arange(6.0), requires_grad=True)
    a, b, c = mt.split(x, 2)
    (b * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 2, 2, 0, 0])


# ---------------------------------------------------------------------------- 0-d tensors
def test_scalar_tensors_through_shape_ops():
    x = mt.tensor(np.float64(0.5), requires_grad=True)
    for op, reference in [(lambda t: t.reshape(1, 1), lambda a: a.reshape(1, 1)),
                          (lambda t: t.reshape(()), lambda a: a.reshape(())),
                          (lambda t: t.T, lambda a: a.T),
                          (lambda t: t.expand_dims(0), lambda a: np.expand_dims(a, 0)),
                          (lambda t: t.squeeze(), np.squeeze),
                          (lambda t: t.broadcast_to((2, 3)), lambda a: np.broadcast_to(a, (2, 3))),
                          (lambda t: t[None], lambda a: a[None]),
                          (lambda t: t[...], lambda a: a[...]),
                          (lambda t: mt.stack([t, t * 2]), lambda a: np.stack([a, a * 2]))]:
        check(op, reference, x)


@pytest.mark.skipif(not mt.cuda.is_available(), reason="needs a GPU (cupy) to move a tensor between devices")
def test_to_device_round_trip():
    x = mt.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    check(lambda t: (t.to('cuda') * 2).to('cpu'), lambda a: a * 2, x)
    assert x.to('cuda').device == 'cuda' and x.to('cuda').cpu().device == 'cpu'
