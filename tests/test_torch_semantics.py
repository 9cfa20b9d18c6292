"""Where numpy and PyTorch mean different things, the Tensor means what PyTorch means:
each call here runs on microtensor and on torch, and the values, shapes, index dtypes and
gradients must agree (hypothesis over shapes, dims and index combinations)."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import distinct_tensors, nonscalar_shapes, shapes, tensors

torch = pytest.importorskip('torch')


def twins(x):
    """A microtensor leaf and a torch leaf with the same float64 values."""
    mine = mt.tensor(x.numpy() if isinstance(x, mt.Tensor) else x, dtype='float64', requires_grad=True)
    theirs = torch.tensor(mine.numpy(), dtype=torch.float64, requires_grad=True)
    return mine, theirs


def same(mine, theirs, rtol=1e-10, atol=1e-12):
    """Same shape and values (and, for index tensors, both int64)."""
    theirs = theirs.detach().numpy()
    assert tuple(mine.shape) == theirs.shape, f"shape {tuple(mine.shape)}, torch gives {theirs.shape}"
    if theirs.dtype == np.int64:
        assert mine.dtype == np.int64
    np.testing.assert_allclose(mine.numpy(), theirs, rtol=rtol, atol=atol, equal_nan=True)


def same_backward(f_mine, f_torch, x):
    """f's output and its gradient (for one random upstream gradient) agree with torch's."""
    mine, theirs = twins(x)
    y_mine, y_torch = f_mine(mine), f_torch(theirs)
    same(y_mine, y_torch)
    upstream = np.random.default_rng(0).standard_normal(tuple(y_torch.shape))
    (y_mine * mt.tensor(upstream)).sum().backward()
    (y_torch * torch.tensor(upstream)).sum().backward()
    same(mine.grad, theirs.grad)


dims = st.data()


def a_dim(data, ndim):
    return data.draw(st.integers(-ndim, ndim - 1)) if ndim else data.draw(st.sampled_from([0, -1]))


# ---------------------------------------------------------------------------- max, min, amax, amin, argmax
@pytest.mark.parametrize('name', ['max', 'min'])
@given(data=st.data(), keepdim=st.booleans(), ties=st.booleans())
def test_max_with_a_dim_is_values_and_indices_and_its_gradient_goes_to_the_index(name, data, keepdim, ties):
    x = data.draw(tensors(data.draw(shapes), low=-2, high=2))
    if ties:  # few distinct values: ties everywhere; the first index wins, as in torch
        x = mt.tensor(np.round(x.numpy()), requires_grad=True)
    dim = a_dim(data, x.ndim)
    mine, theirs = twins(x)
    out, expected = getattr(mine, name)(dim, keepdim), getattr(theirs, name)(dim, keepdim)
    values, indices = out  # unpacks like torch.return_types.max
    assert out.values is values and out.indices is indices and out[0] is values and out[1] is indices
    same(values, expected.values)
    same(indices, expected.indices)
    same_backward(lambda t: getattr(t, name)(dim=dim, keepdim=keepdim).values,
                  lambda t: getattr(t, name)(dim=dim, keepdim=keepdim).values, x)


@pytest.mark.parametrize('name', ['max', 'min', 'amax', 'amin'])
@given(data=st.data())
def test_full_reductions_and_amax_share_the_gradient_between_ties_as_torch(name, data):
    x = data.draw(tensors(data.draw(shapes), low=-2, high=2))
    x = mt.tensor(np.round(x.numpy()), requires_grad=True)  # ties
    same_backward(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x)
    if name.startswith('a') and x.ndim:
        dim = tuple(sorted(set(data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1)))))
        keepdim = data.draw(st.booleans())
        same_backward(lambda t: getattr(t, name)(dim=dim, keepdim=keepdim),
                      lambda t: getattr(t, name)(dim=dim, keepdim=keepdim), x)


@pytest.mark.parametrize('name', ['argmax', 'argmin'])
@given(data=st.data(), keepdim=st.booleans())
def test_argmax_takes_dim_and_keepdim(name, data, keepdim):
    x = data.draw(tensors(data.draw(shapes), low=-2, high=2))
    x = mt.tensor(np.round(x.numpy()))  # ties: the first index
    mine, theirs = twins(x)
    dim = data.draw(st.one_of(st.none(), st.just(a_dim(data, x.ndim))))
    same(getattr(mine, name)(dim=dim, keepdim=keepdim), getattr(theirs, name)(dim=dim, keepdim=keepdim))
    if dim is not None:  # numpy's spellings
        same(getattr(mine, name)(axis=dim, keepdims=keepdim), getattr(theirs, name)(dim=dim, keepdim=keepdim))


def test_max_of_another_tensor_is_the_elementwise_maximum():
    a, b = mt.tensor([1.0, 5.0]), mt.tensor([3.0, 2.0])
    same(a.max(b), torch.tensor([1.0, 5.0]).max(torch.tensor([3.0, 2.0])))
    same(mt.min(a, b), torch.min(torch.tensor([1.0, 5.0]), torch.tensor([3.0, 2.0])))


# ---------------------------------------------------------------------------- var and std
@pytest.mark.parametrize('name', ['var', 'std'])
@given(data=st.data(), keepdim=st.booleans(), correction=st.sampled_from([None, 0, 1, 2]))
def test_var_and_std_divide_as_torch(name, data, keepdim, correction):
    x = data.draw(distinct_tensors(data.draw(nonscalar_shapes)))
    dim = data.draw(st.one_of(st.none(), st.just(a_dim(data, x.ndim))))
    n = x.numel() if dim is None else x.shape[dim]
    assume(n - (1 if correction is None else correction) > 0)
    kwargs = {} if correction is None else {'correction': correction}
    same_backward(lambda t: getattr(t, name)(dim=dim, keepdim=keepdim, **kwargs),
                  lambda t: getattr(t, name)(dim=dim, keepdim=keepdim, **kwargs), x)
    if correction in (0, 1):  # the other spellings of the same divisor
        unbiased = bool(correction)
        same(getattr(x, name)(dim, unbiased, keepdim), getattr(torch.tensor(x.numpy()), name)(dim, unbiased, keepdim))
        same(getattr(x, name)(axis=dim, keepdims=keepdim, ddof=correction),
             getattr(torch.tensor(x.numpy()), name)(dim=dim, keepdim=keepdim, correction=correction))


def test_std_of_equal_values_has_a_zero_gradient_as_torch():
    same_backward(lambda t: t.std(), lambda t: t.std(), mt.tensor([2.0, 2.0, 2.0]))


# ---------------------------------------------------------------------------- norm
@given(data=st.data(), keepdim=st.booleans())
def test_norm_is_torchs_vector_norm_over_the_dims(data, keepdim):
    x = data.draw(distinct_tensors(offset=0.25, gap=0.5))  # distinct magnitudes, none near 0
    p = data.draw(st.sampled_from([2, 1, 3, 0.5, float('inf'), -float('inf'), 'fro']))
    dim = data.draw(st.one_of(st.none(), st.lists(st.integers(0, max(x.ndim - 1, 0)), min_size=1, unique=True)
                              .map(tuple))) if x.ndim else None
    torch_p = 2 if p == 'fro' and dim is not None and len(dim) > 2 else p  # (torch's 'fro' takes at most 2 dims)
    same_backward(lambda t: t.norm(p, dim, keepdim), lambda t: t.norm(torch_p, dim, keepdim), x)


def test_ord_is_torch_linalg_norms_meaning():
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    for ord in [1, -1, float('inf'), 'fro']:
        same(mt.tensor(x).norm(ord=ord), torch.linalg.norm(torch.tensor(x), ord=ord))


# ---------------------------------------------------------------------------- 0-d tensors
@pytest.mark.parametrize('name', ['sum', 'mean', 'amax', 'amin', 'argmax', 'argmin', 'max', 'min', 'squeeze',
                                  'unsqueeze'])
@pytest.mark.parametrize('dim', [0, -1])
def test_a_0d_tensor_takes_dim_0_and_minus_1(name, dim):
    mine, theirs = twins(mt.tensor(1.5))
    out, expected = getattr(mine, name)(dim), getattr(theirs, name)(dim)
    if name in ('max', 'min'):
        same(out.indices, expected.indices)
        out, expected = out.values, expected.values
    same(out, expected)


# ---------------------------------------------------------------------------- split and chunk
@given(data=st.data())
def test_split_and_chunk_cut_as_torch(data):
    x = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7))))
    dim = a_dim(data, x.ndim)
    size = x.shape[dim]
    mine, theirs = twins(x)
    how = data.draw(st.one_of(st.integers(1, 8),
                              st.lists(st.integers(0, size), max_size=3).map(
                                  lambda cuts: [b - a for a, b in zip([0] + sorted(cuts), sorted(cuts) + [size])])))
    for out, expected in [(mt.split(mine, how, dim), torch.split(theirs, how, dim)),
                          (mine.split(how, dim=dim), theirs.split(how, dim=dim))]:
        assert isinstance(out, tuple) and len(out) == len(expected)
        for o, e in zip(out, expected):
            same(o, e)
    n = data.draw(st.integers(1, 8))
    out, expected = mine.chunk(n, dim), theirs.chunk(n, dim)
    assert len(out) == len(expected)
    for o, e in zip(out, expected):
        same(o, e)
    if len(out):
        same_backward(lambda t: mt.concatenate([p * (k + 1) for k, p in enumerate(t.chunk(n, dim))], axis=dim),
                      lambda t: torch.cat([p * (k + 1) for k, p in enumerate(t.chunk(n, dim))], dim=dim), x)


# ---------------------------------------------------------------------------- transpose, permute and the shape family
@given(data=st.data())
def test_transpose_swaps_two_dims_and_permute_permutes(data):
    x = data.draw(tensors(data.draw(nonscalar_shapes)))
    d0, d1 = a_dim(data, x.ndim), a_dim(data, x.ndim)
    same_backward(lambda t: t.transpose(d0, d1), lambda t: t.transpose(d0, d1), x)
    same_backward(lambda t: mt.transpose(t, d0, d1), lambda t: torch.transpose(t, d0, d1), x)
    order = [d - x.ndim if data.draw(st.booleans()) else d for d in data.draw(st.permutations(range(x.ndim)))]
    same_backward(lambda t: t.permute(*order), lambda t: t.permute(*order), x)
    same_backward(lambda t: t.permute(order), lambda t: t.permute(order), x)
    if x.ndim >= 2:
        same_backward(lambda t: t.mT, lambda t: t.mT, x)


@given(data=st.data())
def test_squeeze_leaves_a_dim_whose_size_is_not_1(data):
    x = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=2))))
    chosen = tuple(sorted(set(data.draw(st.lists(st.integers(0, x.ndim - 1), max_size=x.ndim)))))
    dim = data.draw(st.sampled_from([None, chosen] + ([chosen[0]] if chosen else [])))
    same_backward(lambda t: t.squeeze(dim), lambda t: t.squeeze() if dim is None else t.squeeze(dim), x)


@given(data=st.data())
def test_expand_flatten_unflatten_clone_contiguous_as_torch(data):
    x = data.draw(tensors(data.draw(shapes)))
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    sizes = lead + [data.draw(st.sampled_from([-1, n] + [2, 3] * (n == 1))) for n in x.shape]
    same_backward(lambda t: t.expand(*sizes), lambda t: t.expand(sizes), x)  # (torch's expand() wants a size)
    same_backward(lambda t: t.expand(sizes), lambda t: t.expand(sizes), x)
    start = a_dim(data, x.ndim)
    end = data.draw(st.integers(start % max(x.ndim, 1), max(x.ndim - 1, 0))) if x.ndim else start
    same_backward(lambda t: t.flatten(start, end), lambda t: t.flatten(start, end), x)
    same_backward(lambda t: mt.flatten(t), lambda t: torch.flatten(t), x)
    same_backward(lambda t: t.clone() * t, lambda t: t.clone() * t, x)
    same_backward(lambda t: t.T.contiguous(), lambda t: t.permute(tuple(range(t.ndim))[::-1]).contiguous(), x)
    if x.ndim:
        dim = a_dim(data, x.ndim)
        n = x.shape[dim]
        factor = data.draw(st.sampled_from([f for f in range(1, n + 1) if n % f == 0]))
        split = data.draw(st.sampled_from([(factor, n // factor), (factor, -1), (-1, factor), (n,), (1, n, 1)]))
        same_backward(lambda t: t.unflatten(dim, split), lambda t: t.unflatten(dim, split), x)


def test_size_and_numel():
    x, t = mt.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert x.size() == tuple(t.size()) and x.size(1) == t.size(1) and x.size(-1) == t.size(-1)
    assert x.numel() == t.numel() and mt.tensor(2.0).numel() == torch.tensor(2.0).numel()


# ---------------------------------------------------------------------------- indexing that mixes ints and arrays
@st.composite
def mixed_indices(draw):
    """A shape and an index of ints, slices, None, ... and index arrays (lists or int tensors) over it."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=5, min_side=1, max_side=4))
    index, array_shape = [], draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    for n in shape:
        kind = draw(st.sampled_from(['int', 'slice', 'array', 'array', 'skip']))
        if kind == 'skip':
            break  # the rest of the dims are left out (taken whole)
        if kind == 'int':
            index.append(draw(st.integers(-n, n - 1)))
        elif kind == 'slice':
            index.append(slice(draw(st.integers(0, n)), None, draw(st.sampled_from([1, 2]))))
        else:
            ids = draw(hnp.arrays(np.int64, array_shape, elements=st.integers(-n, n - 1)))
            index.append(ids if array_shape else int(ids))
        if draw(st.integers(0, 5)) == 0:
            index.append(None)
    if index and draw(st.booleans()):
        index.insert(draw(st.integers(0, len(index))), Ellipsis)
    return shape, index


@given(case=mixed_indices(), as_tensor=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_indexing_that_mixes_ints_and_index_arrays_gives_torchs_shape_and_gradient(case, as_tensor, seed):
    shape, index = case
    x = np.random.default_rng(seed).standard_normal(shape)

    def build(library):
        return tuple(library.tensor(p) if isinstance(p, np.ndarray) and as_tensor else
                     p.tolist() if isinstance(p, np.ndarray) else p for p in index)
    try:
        expected_shape = torch.zeros(shape)[build(torch)].shape
    except (IndexError, RuntimeError, ValueError):
        with pytest.raises((IndexError, ValueError)):
            mt.zeros(*shape)[build(mt)]
        return
    same_backward(lambda t: t[build(mt)], lambda t: t[build(torch)], x)
    assert mt.zeros(*shape)[build(mt)].shape == tuple(expected_shape)


def test_the_mixed_index_of_the_habit_probe():
    x = np.arange(2 * 3 * 4 * 5 * 6, dtype=np.float64).reshape(2, 3, 4, 5, 6)
    s, d = [0, 1], [[1], [2]]
    same_backward(lambda t: t[1, :, mt.tensor(s), mt.tensor(d), mt.tensor(s)],
                  lambda t: t[1, :, torch.tensor(s), torch.tensor(d), torch.tensor(s)], x)


# ---------------------------------------------------------------------------- shape errors
@pytest.mark.parametrize('call', [
    lambda m: m.ones(2, 3) + m.ones(4),
    lambda m: m.ones(2, 3) @ m.ones(2, 3),
    lambda m: m.ones(2, 3).reshape(4),
    lambda m: m.ones(2, 3).expand(3, 3),
    lambda m: (m.concatenate if m is mt else m.cat)([m.ones(2, 3), m.ones(2, 2)]),
    lambda m: m.stack([m.ones(2, 3), m.ones(2, 2)]),
    lambda m: m.split(m.ones(5), [1, 2]),
])
def test_a_shape_mismatch_is_caught_by_torchs_runtime_error_and_numpys_value_error(call):
    with pytest.raises(RuntimeError):
        call(torch)
    for kind in (RuntimeError, ValueError, mt.ShapeError):
        with pytest.raises(kind):
            call(mt)


# ---------------------------------------------------------------------------- PyTorch's names beside numpy's
@given(data=st.data())
def test_pytorchs_spellings_give_torchs_values(data):
    x = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3))))
    dim = a_dim(data, x.ndim)
    same_backward(lambda t: t.softmax(dim=dim), lambda t: t.softmax(dim=dim), x)
    same_backward(lambda t: mt.log_softmax(t, dim), lambda t: torch.log_softmax(t, dim), x)
    same_backward(lambda t: mt.cat([t, t * 2], dim=dim), lambda t: torch.cat([t, t * 2], dim=dim), x)
    same_backward(lambda t: mt.stack([t, t * 2], dim=dim), lambda t: torch.stack([t, t * 2], dim=dim), x)
    same_backward(lambda t: t[0].t(), lambda t: t[0].t(), x)
    same_backward(lambda t: t.clamp(min=-0.5, max=1.0), lambda t: t.clamp(min=-0.5, max=1.0), x)
    assert x.dim() == torch.zeros(x.shape).dim()
