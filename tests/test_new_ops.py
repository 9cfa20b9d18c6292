"""PyTorch's calls beyond the operators: cumsum, cumprod, logsumexp, einsum, pad, gather,
scatter, scatter_add, one_hot, tril/triu, flip, roll, any/all, isclose/allclose, eye,
nll_loss and cross_entropy's options.  Each: values against torch, a float64 gradient check
over hypothesis' shapes and dims, edge values, and a clear error for bad input."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import devices, nonscalar_shapes, shapes, tensors


def torch_of(x):
    torch = pytest.importorskip('torch')
    return torch.from_numpy(np.array(x.numpy() if isinstance(x, mt.Tensor) else x))


def same(ours, theirs, rtol=1e-7, atol=1e-10):
    expected = theirs.detach().numpy() if hasattr(theirs, 'detach') else np.asarray(theirs)
    assert ours.dtype == expected.dtype, f"dtype {ours.dtype}, torch gives {expected.dtype}"
    assert ours.shape == expected.shape, f"shape {ours.shape}, torch gives {expected.shape}"
    np.testing.assert_allclose(ours.numpy(), expected, rtol=rtol, atol=atol, equal_nan=True)


def same_gradients(fn, torch_fn, *arrays, rtol=1e-7, atol=1e-10):
    """fn's and torch_fn's values and their gradients w.r.t. every array, under one random upstream."""
    torch = pytest.importorskip('torch')
    ours = [mt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = fn(*ours), torch_fn(*theirs)
    same(y, ty, rtol, atol)
    u = np.random.default_rng(0).standard_normal(y.shape)
    (y * mt.tensor(u)).sum().backward()
    (ty * torch.from_numpy(u)).sum().backward()
    for x, tx in zip(ours, theirs):
        same(x.grad, tx.grad, rtol, atol)


def dim_of(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


# ---------------------------------------------------------------------------- cumsum, cumprod
@devices
@pytest.mark.parametrize('name', ['cumsum', 'cumprod'])
@given(data=st.data())
def test_scans_gradient(device, name, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = dim_of(data.draw, x.ndim)
    assert mt.gradcheck(lambda t: getattr(t, name)(dim), [x])


@pytest.mark.parametrize('name', ['cumsum', 'cumprod'])
@given(data=st.data())
def test_scans_match_torch(name, data):
    torch = pytest.importorskip('torch')
    a = data.draw(hnp.arrays(np.float64, data.draw(nonscalar_shapes),
                             elements=st.sampled_from([0.0, 0.0, 1.5, -2.0, 0.5, 3.0])))  # exact zeros, often
    dim = dim_of(data.draw, a.ndim)
    same_gradients(lambda t: getattr(t, name)(dim), lambda t: getattr(torch, name)(t, dim), a)


def test_cumprod_gradient_is_exact_with_zeros():
    for values in ([0.0, 2.0, 3.0], [2.0, 0.0, 3.0], [2.0, 3.0, 0.0], [0.0, 0.0, 3.0], [1.5, 0.0, 0.0, 2.0]):
        x = mt.tensor(np.array(values), requires_grad=True)
        assert mt.gradcheck(lambda t: t.cumprod(0), [x])
        assert mt.gradgradcheck(lambda t: t.cumprod(0), [x])


@pytest.mark.parametrize('dtype', ['int32', 'uint8', 'bool'])
def test_scans_of_integers_are_int64_as_torch(dtype):
    torch = pytest.importorskip('torch')
    a = np.array([[1, 0, 1], [1, 1, 1]]).astype(dtype)
    same(mt.tensor(a).cumsum(1), torch.from_numpy(a).cumsum(1))
    same(mt.cumprod(mt.tensor(a), 0), torch.cumprod(torch.from_numpy(a), 0))


def test_scans_of_a_0d_tensor_and_bad_dims():
    assert mt.tensor(3.0).cumsum(0).item() == 3.0 and mt.tensor(3.0).cumprod(-1).shape == ()
    with pytest.raises(IndexError, match=r"cumsum: axis 2 is out of range for a tensor of shape \(2, 3\)"):
        mt.zeros(2, 3).cumsum(2)


# ---------------------------------------------------------------------------- logsumexp
@devices
@given(data=st.data(), keepdim=st.booleans())
def test_logsumexp_gradient(device, data, keepdim):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = data.draw(st.one_of(st.integers(-x.ndim, x.ndim - 1), st.just(tuple(range(x.ndim)))))
    assert mt.gradcheck(lambda t: t.logsumexp(dim, keepdim), [x])
    assert mt.gradgradcheck(lambda t: mt.logsumexp(t, dim, keepdim), [x])


def test_logsumexp_is_stable_and_matches_torch():
    torch = pytest.importorskip('torch')
    inf = np.inf
    a = np.array([[1e3, 1e3 - 1, -1e3], [-1e3, -1e3, -1e3 + 2], [-inf, 0.0, 1.0], [-inf, -inf, -inf]])
    for dim, keepdim in ((1, False), (0, True), ((0, 1), False)):
        same(mt.tensor(a).logsumexp(dim, keepdim), torch.logsumexp(torch.from_numpy(a), dim, keepdim))
    same_gradients(lambda t: t.logsumexp(1), lambda t: torch.logsumexp(t, 1), a[:3])
    same(mt.tensor([1, 2]).logsumexp(0), torch.logsumexp(torch.tensor([1, 2]), 0), rtol=1e-6)  # integers: float32
    assert mt.tensor([inf, 1.0]).logsumexp(0).item() == inf


# ---------------------------------------------------------------------------- einsum
EINSUMS = [('ij,jk->ik', [(2, 3), (3, 4)]), ('bij,bjk->bik', [(2, 2, 3), (2, 3, 1)]), ('ij->ji', [(2, 3)]),
           ('i,i', [(3,), (3,)]), ('ij->', [(2, 3)]), ('ij->i', [(2, 3)]), ('i,j->ij', [(2,), (3,)]),
           ('bhqd,bhkd->bhqk', [(1, 2, 3, 2), (1, 2, 4, 2)]), ('ij,jk,kl->il', [(2, 2), (2, 3), (3, 2)]),
           ('ij,ij->ij', [(2, 3), (2, 3)]), ('ijk', [(2, 1, 3)]), ('ba,ac', [(2, 3), (3, 2)])]


@devices
@pytest.mark.parametrize('equation', [e for e, _ in EINSUMS])
@given(data=st.data())
def test_einsum_gradient(device, equation, data):
    size = {c: data.draw(st.integers(1, 3)) for c in sorted(set(equation) - set(',->'))}  # a size per axis letter
    specs = equation.split('->')[0].split(',')
    operands = [data.draw(tensors(tuple(size[c] for c in spec), device=device)) for spec in specs]
    np.testing.assert_allclose(mt.einsum(equation, *operands).numpy(),
                               np.einsum(equation, *[t.numpy() for t in operands]), rtol=1e-10, atol=1e-12)
    assert mt.gradcheck(lambda *ts: mt.einsum(equation, *ts), operands)


@pytest.mark.parametrize('equation, shapes_', EINSUMS[:8], ids=[e for e, _ in EINSUMS[:8]])
def test_einsum_matches_torch(equation, shapes_):
    torch = pytest.importorskip('torch')
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes_]
    same_gradients(lambda *ts: mt.einsum(equation, *ts), lambda *ts: torch.einsum(equation, *ts), *arrays)
    assert mt.einsum(equation, [mt.tensor(a) for a in arrays]).shape == tuple(torch.einsum(
        equation, [torch.from_numpy(a) for a in arrays]).shape)


BROADCAST_EINSUMS = [('...ij,...jk->...ik', [(2, 1, 3, 4), (5, 4, 2)]), ('...ij,jk', [(2, 3, 4), (4, 2)]),
                     ('i...->...', [(2, 3, 4)]), ('bij,bjk->bik', [(1, 2, 3), (4, 3, 2)]), ('...,...', [(3,), (2, 1)]),
                     ('bhqd,bhkd->bhqk', [(2, 1, 3, 2), (1, 2, 4, 2)])]


@pytest.mark.parametrize('equation, shapes_', BROADCAST_EINSUMS, ids=[e for e, _ in BROADCAST_EINSUMS])
def test_einsum_broadcasts_as_torch(equation, shapes_):
    torch = pytest.importorskip('torch')
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in shapes_]
    same_gradients(lambda *ts: mt.einsum(equation, *ts), lambda *ts: torch.einsum(equation, *ts), *arrays)
    assert mt.gradcheck(lambda *ts: mt.einsum(equation, *ts), [mt.tensor(a, requires_grad=True) for a in arrays])


@pytest.mark.parametrize('equation, shapes_, message', [
    ('ii->i', [(2, 3)], "repeats 'i' over axes of sizes 2 and 3"), ('...i...->i', [(2, 2)], "at most once per operand"),
    ('ij,jk->ik', [(2, 3), (4, 2)], "axis 'j' has size 3 in one operand and 4 in another"),
    ('ij,jk->ik', [(2, 3)], "describes 2 operands but 1 were given"), ('ij->k', [(2, 3)], "the output 'k'"),
    ('ijk->i', [(2, 3)], "'ijk' names 3 axes but its operand has shape")])
def test_einsum_refuses_clearly(equation, shapes_, message):
    with pytest.raises(ValueError, match='einsum: .*' + message):
        mt.einsum(equation, *[mt.zeros(*s) for s in shapes_])


# ---------------------------------------------------------------------------- pad
@st.composite
def pads(draw, shape):
    n = draw(st.integers(1, len(shape)))
    widths = []
    for size in shape[::-1][:n]:
        before = draw(st.integers(-size, 2))
        widths += [before, draw(st.integers(-(size + min(before, 0)), 2))]
    return tuple(widths)


@devices
@given(data=st.data(), value=st.sampled_from([0.0, -1.5]))
def test_pad_gradient_and_torch(device, data, value):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    widths = data.draw(pads(x.shape))
    assert mt.gradcheck(lambda t: mt.pad(t, widths, value=value), [x])
    torch = pytest.importorskip('torch')
    same(mt.pad(x, widths, value=value), torch.nn.functional.pad(torch_of(x), widths, value=value))


def test_pad_refuses_clearly():
    x = mt.zeros(2, 3)
    with pytest.raises(ValueError, match=r"pad: pad must be a tuple of \(before, after\) pairs"):
        mt.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"pad: widths \(-2, -2\) on axis 1 of size 3 leave a negative size"):
        mt.pad(x, (-2, -2))
    with pytest.raises(ValueError, match="pad: a 0-d tensor has no axis to pad"):
        mt.pad(mt.tensor(1.0), ())
    with pytest.raises(ValueError, match="mode='reflect' is not supported"):
        mt.pad(x, (1, 1), mode='reflect')
    with pytest.raises(RuntimeError, match="pad: the value nan does not fit in int64"):
        mt.pad(mt.tensor([1, 2]), (1, 1), value=float('nan'))


# ---------------------------------------------------------------------------- gather, scatter, one_hot
@st.composite
def index_along(draw, shape, dim, low=0):
    """An index for gather/scatter: as many axes as x, at most x's size off dim, any size on dim."""
    index_shape = tuple(draw(st.integers(1, 4)) if a == dim else draw(st.integers(1, n)) for a, n in enumerate(shape))
    return draw(hnp.arrays(np.int64, index_shape, elements=st.integers(low, shape[dim] - 1)))


@devices
@given(data=st.data())
def test_gather_gradient_and_torch(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = dim_of(data.draw, x.ndim)
    index = data.draw(index_along(x.shape, dim % x.ndim))
    ids = mt.tensor(index, device=device)
    assert mt.gradcheck(lambda t: t.gather(dim, ids), [x])
    torch = pytest.importorskip('torch')
    same_gradients(lambda t: mt.gather(t, dim, ids.cpu()), lambda t: torch.gather(t, dim, torch.from_numpy(index)),
                   x.numpy())


@devices
@given(data=st.data())
def test_scatter_gradient_and_torch(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = dim_of(data.draw, x.ndim) % x.ndim
    # distinct positions along dim in each line, so no write is lost (PyTorch leaves repeated ones undefined)
    size = data.draw(st.integers(1, x.shape[dim]))
    index_shape = tuple(size if a == dim else data.draw(st.integers(1, n)) for a, n in enumerate(x.shape))
    chosen = np.stack([np.array(data.draw(st.permutations(range(x.shape[dim]))))[:size]
                       for _ in range(int(np.prod(index_shape)) // size)])
    index = np.moveaxis(chosen.reshape(tuple(n for a, n in enumerate(index_shape) if a != dim) + (size,)), -1, dim)
    src = data.draw(tensors(tuple(n + data.draw(st.integers(0, 1)) for n in index_shape), device=device))
    ids = mt.tensor(index, device=device)
    assert mt.gradcheck(lambda t, s: t.scatter(dim, ids, s), [x, src])
    assert mt.gradcheck(lambda t, s: t.scatter_add(dim, ids, s), [x, src])
    torch = pytest.importorskip('torch')
    exact = src.numpy()[tuple(slice(0, n) for n in index_shape)]  # (torch's backward fails for a larger src)
    same_gradients(lambda t, s: t.scatter(dim, ids.cpu(), s),
                   lambda t, s: t.scatter(dim, torch.from_numpy(index), s), x.numpy(), exact)


def test_scatter_add_adds_repeated_indices_as_torch():
    torch = pytest.importorskip('torch')
    x, src, index = np.zeros((2, 3)), np.arange(1.0, 7.0).reshape(2, 3), np.array([[0, 0, 2], [1, 1, 1]])
    same_gradients(lambda t, s: t.scatter_add(1, mt.tensor(index), s),
                   lambda t, s: t.scatter_add(1, torch.from_numpy(index), s), x, src)
    same(mt.tensor(x).scatter(1, mt.tensor([[2], [0]]), 5.0),
         torch.from_numpy(x).scatter(1, torch.tensor([[2], [0]]), 5.0))


def test_gather_and_scatter_refuse_clearly():
    x = mt.zeros(2, 3)
    with pytest.raises(IndexError, match=r"gather: index 3 is out of bounds for dim 1 of size 3"):
        x.gather(1, mt.tensor([[3]]))
    with pytest.raises(IndexError, match=r"gather: index -1 is out of bounds"):
        x.gather(1, mt.tensor([[-1]]))
    with pytest.raises(ValueError, match=r"gather: the index has shape \(2,\) but needs as many axes as x"):
        x.gather(1, mt.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"gather: the index \(3, 1\) is larger than x \(2, 3\) on axis 0"):
        x.gather(1, mt.tensor([[0], [1], [2]]))
    assert mt.tensor(3.0).gather(0, mt.tensor(0)).item() == 3.0  # a 0-d tensor, as in PyTorch
    with pytest.raises(IndexError, match="gather: axis 1 is out of range"):
        mt.tensor(3.0).gather(1, mt.tensor(0))
    with pytest.raises(TypeError, match="gather: the index must hold integers, not float32"):
        x.gather(1, mt.tensor([[0.0]]))
    with pytest.raises(ValueError, match="scatter: src of shape .* must be at least as large as the index"):
        x.scatter(1, mt.tensor([[0, 1]]), mt.zeros(1, 1))


@given(ids=hnp.arrays(np.int64, shapes, elements=st.integers(0, 4)), extra=st.integers(0, 2))
def test_one_hot_matches_torch(ids, extra):
    torch = pytest.importorskip('torch')
    F = torch.nn.functional
    assume(ids.size)
    same(mt.one_hot(mt.tensor(ids)), F.one_hot(torch.from_numpy(ids)))
    n = int(ids.max()) + 1 + extra
    same(mt.one_hot(mt.tensor(ids), n), F.one_hot(torch.from_numpy(ids), n))


def test_one_hot_refuses_clearly():
    with pytest.raises(IndexError, match=r"one_hot: ids must lie in \[0, 2\), got 0 to 2"):
        mt.one_hot(mt.tensor([0, 2]), 2)
    with pytest.raises(TypeError, match="one_hot: ids must be integers, not float32"):
        mt.one_hot(mt.tensor([0.0]))


# ---------------------------------------------------------------------------- tril, triu, flip, roll
@devices
@pytest.mark.parametrize('name', ['tril', 'triu'])
@given(data=st.data(), diagonal=st.integers(-3, 3))
def test_triangles(device, name, data, diagonal):
    x = data.draw(tensors(data.draw(hnp.array_shapes(min_dims=2, max_dims=3, max_side=4)), device=device))
    assert mt.gradcheck(lambda t: getattr(t, name)(diagonal), [x])
    torch = pytest.importorskip('torch')
    same_gradients(lambda t: getattr(mt, name)(t, diagonal), lambda t: getattr(torch, name)(t, diagonal), x.numpy())


def test_triangles_need_a_matrix():
    with pytest.raises(ValueError, match=r"tril: needs a tensor of at least 2 dimensions .*not shape \(3,\)"):
        mt.zeros(3).tril()


@devices
@given(data=st.data())
def test_flip_and_roll(device, data):
    torch = pytest.importorskip('torch')
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dims = tuple(data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1)))
    shifts = tuple(data.draw(st.integers(-5, 5)) for _ in dims)
    assert mt.gradcheck(lambda t: t.flip(dims), [x])
    assert mt.gradcheck(lambda t: t.roll(shifts, dims), [x])
    assert mt.gradcheck(lambda t: t.roll(shifts[0]), [x])
    same_gradients(lambda t: t.flip(dims), lambda t: t.flip(dims), x.numpy())
    same_gradients(lambda t: mt.roll(t, shifts, dims), lambda t: torch.roll(t, shifts, dims), x.numpy())
    same_gradients(lambda t: t.roll(shifts[0]), lambda t: t.roll(shifts[0]), x.numpy())


def test_flip_and_roll_refuse_clearly():
    with pytest.raises(ValueError, match=r"flip: dims \(0, 0\) names an axis twice"):
        mt.zeros(2).flip((0, -1))
    with pytest.raises(ValueError, match=r"roll: shifts \(1, 2\) and dims \(0,\) must have the same length"):
        mt.zeros(2).roll((1, 2), 0)


# ---------------------------------------------------------------------------- any, all, isclose, eye
@pytest.mark.parametrize('name', ['any', 'all'])
@given(data=st.data(), keepdim=st.booleans(), dtype=st.sampled_from(['bool', 'uint8', 'int32', 'float64']))
def test_any_all_match_torch(name, data, keepdim, dtype):
    torch = pytest.importorskip('torch')
    a = data.draw(hnp.arrays(dtype, shapes, elements=st.sampled_from([0, 1]).map(np.dtype(dtype).type)))
    same(getattr(mt.tensor(a), name)(), getattr(torch.from_numpy(a), name)())
    if a.ndim:
        dim = dim_of(data.draw, a.ndim)
        same(getattr(mt.tensor(a), name)(dim, keepdim), getattr(torch.from_numpy(a), name)(dim, keepdim))
        same(getattr(mt, name)(mt.tensor(a), axis=dim, keepdims=keepdim),
             getattr(torch.from_numpy(a), name)(dim, keepdim))


def test_any_refuses_dim_and_axis_together():
    with pytest.raises(TypeError, match="any: got dim=0 and axis=0; pass one of them"):
        mt.zeros(2).any(0, axis=0)


def test_isclose_matches_torch():
    torch = pytest.importorskip('torch')
    a = np.array([1.0, 1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 0.0])
    b = np.array([1.0, 1.0, 1.0, np.inf, np.inf, np.nan, 1e-9])
    for options in ({}, dict(equal_nan=True), dict(rtol=0.2), dict(atol=0.0, rtol=0.0)):
        same(mt.isclose(mt.tensor(a), mt.tensor(b), **options),
             torch.isclose(torch.from_numpy(a), torch.from_numpy(b), **options))
        assert mt.tensor(a[:3]).allclose(mt.tensor(b[:3]), **options) == torch.allclose(
            torch.from_numpy(a[:3]), torch.from_numpy(b[:3]), **options)
    with pytest.raises(ValueError, match="isclose: rtol must be a finite number >= 0, not -1.0"):
        mt.isclose(mt.tensor(a), mt.tensor(b), rtol=-1)


@pytest.mark.parametrize('n, m', [(3, None), (2, 4), (4, 2), (0, 3)])
@pytest.mark.parametrize('dtype', [None, 'int64', 'bool'])
def test_eye_matches_torch(n, m, dtype):
    torch = pytest.importorskip('torch')
    ours = mt.eye(n, m, dtype=dtype)
    theirs = torch.eye(n, n if m is None else m, **({} if dtype is None else dict(dtype=getattr(torch, dtype))))
    same(ours, theirs)


def test_eye_refuses_negative_sizes():
    with pytest.raises(ValueError, match="eye: m must be an integer >= 0, not -1"):
        mt.eye(2, -1)


# ---------------------------------------------------------------------------- nll_loss, cross_entropy
@st.composite
def classification(draw, device='cpu', ignore_index=None):
    positions = draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3))
    n_classes = draw(st.integers(1, 4))
    logits = draw(tensors(positions + (n_classes,), device=device))
    targets = draw(hnp.arrays(np.int64, positions, elements=st.integers(0, n_classes - 1)))
    if ignore_index is not None:
        targets[draw(hnp.arrays(bool, positions))] = ignore_index
    return logits, targets


def torch_loss(fn, logits, targets, reduction, **options):
    """torch's loss on our class-last layout: positions flattened to (N, C), back to (...) for 'none'."""
    torch = pytest.importorskip('torch')
    C = logits.shape[-1]
    flat_targets = targets.reshape(-1, C) if targets.is_floating_point() else targets.reshape(-1)
    out = fn(logits.reshape(-1, C), flat_targets, reduction=reduction, **options)
    return out.reshape(logits.shape[:-1]) if reduction == 'none' else out


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), ignore=st.booleans())
def test_nll_loss(device, reduction, data, weighted, ignore):
    torch = pytest.importorskip('torch')
    logits, targets = data.draw(classification(device, -100 if ignore else None))
    assume(reduction != 'mean' or (targets != -100).any())  # a mean over nothing is nan (tested below)
    C = logits.shape[-1]
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    options = dict(ignore_index=-100 if ignore else None, reduction=reduction,
                   weight=None if weight is None else mt.tensor(weight, device=device))
    logp = logits.log_softmax(-1)
    ids = mt.tensor(targets, device=device)
    assert mt.gradcheck(lambda t: mt.nll_loss(t, ids, **options), [logp.detach().requires_grad_()])
    torch_options = dict(weight=None if weight is None else torch.from_numpy(weight), ignore_index=-100)
    cpu_options = {**options, 'weight': None if weight is None else mt.tensor(weight)}
    same_gradients(lambda t: mt.nll_loss(t, ids.cpu(), **cpu_options),
                   lambda t: torch_loss(torch.nn.functional.nll_loss, t, torch.from_numpy(targets), reduction,
                                        **torch_options), logp.numpy())


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), ignore=st.booleans(), smoothing=st.sampled_from([0.0, 0.1, 1.0]))
def test_cross_entropy_with_class_ids(device, reduction, data, weighted, ignore, smoothing):
    torch = pytest.importorskip('torch')
    logits, targets = data.draw(classification(device, -100 if ignore else None))
    assume(reduction != 'mean' or (targets != -100).any())
    C = logits.shape[-1]
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    options = dict(ignore_index=-100 if ignore else None, reduction=reduction, label_smoothing=smoothing)
    ids = mt.tensor(targets, device=device)
    w = None if weight is None else mt.tensor(weight, device=device)
    assert mt.gradcheck(lambda t: mt.cross_entropy(t, ids, weight=w, **options), [logits])
    same_gradients(lambda t: mt.cross_entropy(t, ids.cpu(), weight=None if w is None else w.cpu(), **options),
                   lambda t: torch_loss(torch.nn.functional.cross_entropy, t, torch.from_numpy(targets), reduction,
                                        weight=None if weight is None else torch.from_numpy(weight),
                                        ignore_index=-100, label_smoothing=smoothing), logits.numpy())


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), smoothing=st.sampled_from([0.0, 0.2]))
def test_cross_entropy_with_probabilities(device, reduction, data, weighted, smoothing):
    torch = pytest.importorskip('torch')
    logits, _ = data.draw(classification(device))
    C = logits.shape[-1]
    raw = data.draw(hnp.arrays(np.float64, logits.shape, elements=st.floats(0.01, 1.0)))
    p = raw / raw.sum(-1, keepdims=True)
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    w = None if weight is None else mt.tensor(weight, device=device)
    probabilities = mt.tensor(p, device=device, requires_grad=True)
    assert mt.gradcheck(lambda t, q: mt.cross_entropy(t, q, weight=w, reduction=reduction, label_smoothing=smoothing),
                        [logits, probabilities])
    same_gradients(lambda t, q: mt.cross_entropy(t, q, weight=None if w is None else w.cpu(), reduction=reduction,
                                                 label_smoothing=smoothing),
                   lambda t, q: torch_loss(torch.nn.functional.cross_entropy, t, q, reduction,
                                           weight=None if weight is None else torch.from_numpy(weight),
                                           label_smoothing=smoothing), logits.numpy(), p)


def test_losses_with_every_target_ignored_are_nan_with_zero_gradient():
    for loss in (lambda t: mt.nll_loss(t, mt.tensor([-1, -1]), ignore_index=-1),
                 lambda t: mt.cross_entropy(t, mt.tensor([-1, -1]), ignore_index=-1, label_smoothing=0.1)):
        x = mt.tensor(np.ones((2, 3)), requires_grad=True)
        y = loss(x)
        assert np.isnan(y.item())
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize('call, error, message', [
    (lambda: mt.cross_entropy(mt.zeros(2, 3), mt.tensor([0, 1]), reduction='avg'), ValueError,
     "cross_entropy: reduction must be one of 'mean', 'sum', 'none', not str 'avg'"),
    (lambda: mt.cross_entropy(mt.zeros(2, 3), mt.tensor([0, 1]), weight=mt.ones(2)), ValueError,
     r"cross_entropy: weight must have one entry per class, shape \(3,\), not \(2,\)"),
    (lambda: mt.cross_entropy(mt.zeros(2, 3), mt.tensor([0, 1]), label_smoothing=1.5), ValueError,
     r"label_smoothing must be a finite number in \[0, 1\], not 1.5"),
    (lambda: mt.cross_entropy(mt.zeros(2, 3), mt.zeros(2, 3), ignore_index=0), ValueError,
     "ignore_index applies to class-id targets, not to probabilities"),
    (lambda: mt.cross_entropy(mt.zeros(2, 3), mt.zeros(3, 3)), ValueError,
     r"targets of shape \(3, 3\) do not match logits \(2, 3\) .* or the logits' whole shape, for probabilities"),
    (lambda: mt.nll_loss(mt.zeros(2, 3), mt.tensor([0, 3])), IndexError,
     r"nll_loss: a target id is outside \[0, 3\) \(e.g. 3\)"),
    (lambda: mt.nll_loss(mt.zeros(2, 3), mt.tensor([0.0, 1.0])), TypeError,
     "nll_loss: targets must be integer class ids, not float32"),
])
def test_loss_arguments_are_checked(call, error, message):
    with pytest.raises(error, match=message):
        call()
