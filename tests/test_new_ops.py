"""PyTorch's calls beyond the operators: cumsum, cumprod, logsumexp, einsum, pad, gather,
scatter, scatter_add, one_hot, tril/triu, flip, roll, any/all, isclose/allclose, eye,
nll_loss and cross_entropy's options.  Each: a float64 gradient check over hypothesis' shapes,
dims and options, edge values, and a clear error for bad input.  (Their values and gradients
against PyTorch, on the op registry's samples, are tests/test_op_registry.py's.)"""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import microtensor as mt
from strategies import devices, distinct_tensors, nonscalar_shapes, tensors


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


def test_cumprod_gradient_is_exact_with_zeros():
    for values in ([0.0, 2.0, 3.0], [2.0, 0.0, 3.0], [2.0, 3.0, 0.0], [0.0, 0.0, 3.0], [1.5, 0.0, 0.0, 2.0]):
        x = mt.tensor(np.array(values), requires_grad=True)
        assert mt.gradcheck(lambda t: t.cumprod(0), [x])
        assert mt.gradgradcheck(lambda t: t.cumprod(0), [x])


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
def test_pad_gradient(device, data, value):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    widths = data.draw(pads(x.shape))
    assert mt.gradcheck(lambda t: mt.pad(t, widths, value=value), [x])


def test_pad_refuses_clearly():
    x = mt.zeros(2, 3)
    with pytest.raises(ValueError, match=r"pad: pad must be a tuple of \(before, after\) pairs"):
        mt.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"pad: widths \(-2, -2\) on axis 1 of size 3 leave a negative size"):
        mt.pad(x, (-2, -2))
    with pytest.raises(ValueError, match="pad: a 0-d tensor has no axis to pad"):
        mt.pad(mt.tensor(1.0), ())
    with pytest.raises(ValueError, match="pad: mode must be 'constant', 'reflect', 'replicate' or 'circular'"):
        mt.pad(x, (1, 1), mode='mirror')
    with pytest.raises(ValueError, match=r"pad: mode 'reflect' needs widths < the size of the dim they pad"):
        mt.pad(x, (3, 0), mode='reflect')
    with pytest.raises(ValueError, match="value=1 is for mode 'constant' only"):
        mt.pad(x, (1, 1), mode='replicate', value=1)
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
def test_gather_gradient(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = dim_of(data.draw, x.ndim)
    index = data.draw(index_along(x.shape, dim % x.ndim))
    ids = mt.tensor(index, device=device)
    assert mt.gradcheck(lambda t: t.gather(dim, ids), [x])


@devices
@given(data=st.data())
def test_scatter_gradient(device, data):
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


def test_triangles_need_a_matrix():
    with pytest.raises(ValueError, match=r"tril: needs a tensor of at least 2 dimensions .*not shape \(3,\)"):
        mt.zeros(3).tril()


@devices
@given(data=st.data())
def test_flip_and_roll(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dims = tuple(data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1)))
    shifts = tuple(data.draw(st.integers(-5, 5)) for _ in dims)
    assert mt.gradcheck(lambda t: t.flip(dims), [x])
    assert mt.gradcheck(lambda t: t.roll(shifts, dims), [x])
    assert mt.gradcheck(lambda t: t.roll(shifts[0]), [x])
    np.testing.assert_array_equal(mt.roll(x, shifts, dims).numpy(), np.roll(x.numpy(), shifts, dims))
    np.testing.assert_array_equal(x.flip(dims).numpy(), np.flip(x.numpy(), dims))


def test_flip_and_roll_refuse_clearly():
    with pytest.raises(ValueError, match=r"flip: dims \(0, 0\) names an axis twice"):
        mt.zeros(2).flip((0, -1))
    with pytest.raises(ValueError, match=r"roll: shifts \(1, 2\) and dims \(0,\) must have the same length"):
        mt.zeros(2).roll((1, 2), 0)


# ---------------------------------------------------------------------------- outer, unbind
@devices
@given(data=st.data())
def test_outer_gradient(device, data):
    a = data.draw(tensors((data.draw(st.integers(1, 4)),), device=device))
    b = data.draw(tensors((data.draw(st.integers(1, 4)),), device=device))
    np.testing.assert_allclose(mt.outer(a, b).numpy(), np.outer(a.numpy(), b.numpy()), rtol=1e-12)
    assert mt.gradcheck(mt.outer, [a, b])


def test_outer_refuses_what_is_not_two_vectors():
    with pytest.raises(mt.ShapeError, match=r"outer: needs two 1-D tensors, not shapes \(2, 2\) and \(3,\)"):
        mt.outer(mt.ones(2, 2), mt.ones(3))
    with pytest.raises(TypeError, match="outer: other must be a Tensor, not list"):
        mt.ones(2).outer([1.0, 2.0])


@devices
@given(data=st.data())
def test_unbind_gradient(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    dim = dim_of(data.draw, x.ndim)
    pieces = x.unbind(dim)
    assert len(pieces) == x.shape[dim] and all(p.shape == x.shape[:dim % x.ndim] + x.shape[dim % x.ndim + 1:]
                                               for p in pieces)
    weights = [float(i + 1) for i in range(len(pieces))]  # each piece's gradient lands in its own slice
    assert mt.gradcheck(lambda t: sum((p * w).sum() for p, w in zip(mt.unbind(t, dim), weights)), [x])


@devices
@given(data=st.data(), largest=st.booleans())
def test_topk_gradient(device, data, largest):
    x = data.draw(distinct_tensors(data.draw(nonscalar_shapes), device=device))  # no ties: one order
    dim = dim_of(data.draw, x.ndim)
    k = data.draw(st.integers(0, x.shape[dim]))
    values, indices = x.topk(k, dim, largest=largest)
    expected = np.sort(x.numpy(), axis=dim)
    expected = np.take(np.flip(expected, axis=dim) if largest else expected, np.arange(k), axis=dim)
    np.testing.assert_array_equal(values.numpy(), expected)
    np.testing.assert_array_equal(np.take_along_axis(x.numpy(), indices.numpy(), axis=dim), expected)
    assert mt.gradcheck(lambda t: mt.topk(t, k, dim, largest).values, [x])


def test_topk_refuses_clearly():
    with pytest.raises(mt.ShapeError, match=r"topk: k=4 is more than the 3 entries along dim 1 of shape \(2, 3\)"):
        mt.zeros(2, 3).topk(4)
    with pytest.raises(mt.DTypeError, match="topk of a bool tensor is not defined"):
        mt.tensor([True, False]).topk(1)


# ---------------------------------------------------------------------------- scaled_dot_product_attention
@devices
@given(data=st.data(), causal=st.booleans())
def test_scaled_dot_product_attention_gradient(device, data, causal):
    L, S, E = (data.draw(st.integers(1, 3)) for _ in range(3))
    q, k, v = (data.draw(tensors(shape, device=device)) for shape in ((2, L, E), (2, S, E), (2, S, 2)))
    F = mt.nn.functional
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    mask = np.tril(np.ones((L, S), bool)) if causal else np.ones((L, S), bool)
    scores = q.numpy() @ np.swapaxes(k.numpy(), -1, -2) / np.sqrt(E)
    weights = np.where(mask, np.exp(scores - scores.max(-1, keepdims=True)), 0)
    expected = np.where(mask.any(-1, keepdims=True), weights / np.maximum(weights.sum(-1, keepdims=True), 1e-300), 0)
    np.testing.assert_allclose(out.numpy(), expected @ v.numpy(), rtol=1e-9, atol=1e-12)
    assert mt.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal), [q, k, v])


def test_scaled_dot_product_attention_refuses_clearly():
    F, x = mt.nn.functional, mt.ones(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="attn_mask and is_causal=True together"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=mt.ones(3, 3, dtype='bool'), is_causal=True)
    with pytest.raises(mt.ShapeError, match="3 query heads cannot be shared by 2 key/value heads"):
        F.scaled_dot_product_attention(mt.ones(1, 3, 2, 4), x, x, enable_gqa=True)
    with pytest.raises(mt.DTypeError, match="query, key and value must be of one floating-point dtype"):
        F.scaled_dot_product_attention(x, x, x.double())


# ---------------------------------------------------------------------------- any, all, isclose, eye
@pytest.mark.parametrize('name', ['any', 'all'])
@given(data=st.data(), keepdim=st.booleans(), dtype=st.sampled_from(['bool', 'uint8', 'int32', 'float64']))
def test_any_all_take_numpys_spelling(name, data, keepdim, dtype):
    a = data.draw(hnp.arrays(dtype, nonscalar_shapes, elements=st.sampled_from([0, 1]).map(np.dtype(dtype).type)))
    dim = dim_of(data.draw, a.ndim)
    ours = getattr(mt, name)(mt.tensor(a), axis=dim, keepdims=keepdim)
    np.testing.assert_array_equal(ours.numpy(), getattr(np, name)(a, axis=dim, keepdims=keepdim))
    assert ours.dtype == ('uint8' if dtype == 'uint8' else 'bool')  # (uint8 stays uint8, as in PyTorch)


def test_any_refuses_dim_and_axis_together():
    with pytest.raises(TypeError, match="any: got dim=0 and axis=0; pass one of them"):
        mt.zeros(2).any(0, axis=0)


def test_isclose_refuses_a_negative_tolerance():
    with pytest.raises(ValueError, match="isclose: rtol must be a finite number >= 0, not -1.0"):
        mt.isclose(mt.ones(2), mt.ones(2), rtol=-1)


@pytest.mark.parametrize('n, m', [(3, None), (2, 4), (4, 2), (0, 3)])
@pytest.mark.parametrize('dtype', [None, 'int64', 'bool'])
def test_eye(n, m, dtype):
    ours = mt.eye(n, m, dtype=dtype)
    assert ours.dtype == (dtype or 'float32')  # the default float, as PyTorch's torch.eye
    np.testing.assert_array_equal(ours.numpy(), np.eye(n, m, dtype=dtype or 'float32'))


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


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), ignore=st.booleans())
def test_nll_loss(device, reduction, data, weighted, ignore):
    logits, targets = data.draw(classification(device, -100 if ignore else None))
    assume(reduction != 'mean' or (targets != -100).any())  # a mean over nothing is nan (tested below)
    C = logits.shape[-1]
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    options = dict(ignore_index=-100 if ignore else None, reduction=reduction,
                   weight=None if weight is None else mt.tensor(weight, device=device))
    logp = logits.log_softmax(-1)
    ids = mt.tensor(targets, device=device)
    assert mt.gradcheck(lambda t: mt.nll_loss(t, ids, **options), [logp.detach().requires_grad_()])


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), ignore=st.booleans(), smoothing=st.sampled_from([0.0, 0.1, 1.0]))
def test_cross_entropy_with_class_ids(device, reduction, data, weighted, ignore, smoothing):
    logits, targets = data.draw(classification(device, -100 if ignore else None))
    assume(reduction != 'mean' or (targets != -100).any())
    C = logits.shape[-1]
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    options = dict(ignore_index=-100 if ignore else None, reduction=reduction, label_smoothing=smoothing)
    ids = mt.tensor(targets, device=device)
    w = None if weight is None else mt.tensor(weight, device=device)
    assert mt.gradcheck(lambda t: mt.cross_entropy(t, ids, weight=w, **options), [logits])


@devices
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@given(data=st.data(), weighted=st.booleans(), smoothing=st.sampled_from([0.0, 0.2]))
def test_cross_entropy_with_probabilities(device, reduction, data, weighted, smoothing):
    logits, _ = data.draw(classification(device))
    C = logits.shape[-1]
    raw = data.draw(hnp.arrays(np.float64, logits.shape, elements=st.floats(0.01, 1.0)))
    p = raw / raw.sum(-1, keepdims=True)
    weight = data.draw(hnp.arrays(np.float64, (C,), elements=st.floats(0.1, 2.0))) if weighted else None
    w = None if weight is None else mt.tensor(weight, device=device)
    probabilities = mt.tensor(p, device=device, requires_grad=True)
    assert mt.gradcheck(lambda t, q: mt.cross_entropy(t, q, weight=w, reduction=reduction, label_smoothing=smoothing),
                        [logits, probabilities])


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


# ---------------------------------------------------------------------------- F.silu, F.embedding
@devices
@given(data=st.data())
def test_silu_gradient(device, data):
    x = data.draw(tensors(data.draw(nonscalar_shapes), device=device))
    np.testing.assert_allclose(mt.nn.functional.silu(x).numpy(), x.numpy() / (1 + np.exp(-x.numpy())), rtol=1e-12)
    assert mt.gradcheck(mt.nn.functional.silu, [x])


@devices
@given(data=st.data(), padding=st.booleans())
def test_embedding_gradient(device, data, padding):
    weight = data.draw(tensors((data.draw(st.integers(1, 5)), data.draw(st.integers(1, 3))), device=device))
    ids = data.draw(hnp.arrays(np.int64, data.draw(nonscalar_shapes), elements=st.integers(0, weight.shape[0] - 1)))
    padding_idx = 0 if padding else None
    out = mt.nn.functional.embedding(mt.tensor(ids, device=device), weight, padding_idx)
    np.testing.assert_array_equal(out.numpy(), weight.numpy()[ids])
    if padding:  # the padding row gets no gradient, by design (as in PyTorch): not a finite difference's
        out.sum().backward()
        assert not weight.grad.numpy()[0].any()
    else:
        assert mt.gradcheck(lambda w: mt.nn.functional.embedding(mt.tensor(ids, device=device), w), [weight])


# ---------------------------------------------------------------------------- normal_, uniform_
def test_normal_and_uniform_fill_in_place_from_the_seeded_generator():
    x = mt.zeros(20000, dtype='float64')
    mt.manual_seed(3)
    assert x.normal_(2.0, 0.5) is x
    assert abs(x.numpy().mean() - 2.0) < 0.02 and abs(x.numpy().std() - 0.5) < 0.02
    first = x.numpy().copy()
    mt.manual_seed(3)
    np.testing.assert_array_equal(x.normal_(2.0, 0.5).numpy(), first)
    u = mt.zeros(20000).uniform_(-1, 3)
    assert u.numpy().min() >= -1 and u.numpy().max() < 3 and abs(u.numpy().mean() - 1) < 0.05
    assert mt.zeros(5).uniform_(**{'from': 2, 'to': 2}).tolist() == [2.0] * 5


@pytest.mark.parametrize('call, error, message', [
    (lambda: mt.zeros(2, dtype=mt.long).normal_(), mt.DTypeError, r'normal_: needs a float tensor, not int64'),
    (lambda: mt.zeros(2).normal_(0.0, -1.0), ValueError, r'normal_: std must be >= 0'),
    (lambda: mt.zeros(2).uniform_(1, 0), ValueError, r'uniform_: needs from <= to'),
    (lambda: mt.zeros(2).uniform_(low=1), TypeError, r'uniform_: takes the bounds from and to'),
    (lambda: mt.zeros(2, requires_grad=True).normal_(), RuntimeError, r'in-place change of a tensor that requires'),
])
def test_random_fills_refuse_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------- scatter_reduce
@pytest.mark.parametrize('reduce', ['sum', 'mean', 'amax', 'amin'])
@given(data=st.data(), include_self=st.booleans())
def test_scatter_reduce_gradient(reduce, data, include_self):
    n = data.draw(st.integers(0, 6))
    index = mt.tensor(np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=3 * n, max_size=3 * n))).reshape(3, n)
                      .astype('int64'))
    # distinct values 1/8 apart (near a tie at an amax or amin result there is no derivative)
    values = np.random.default_rng(data.draw(st.integers(0, 1000))).permutation(12 + 3 * n) / 8 - 2
    x = mt.tensor(values[:12].reshape(3, 4), requires_grad=True)
    src = mt.tensor(values[12:].reshape(3, n), requires_grad=True)
    f = lambda a, b: mt.scatter_reduce(a, 1, index, b, reduce, include_self=include_self)  # noqa: E731
    assert mt.gradcheck(f, [x, src])


def test_scatter_reduce_at_known_points():
    x, index, src = mt.tensor([1.0, 2.0, 3.0]), mt.tensor([0, 0, 2]), mt.tensor([5.0, 7.0, 1.0])
    assert mt.scatter_reduce(x, 0, index, src, 'sum').tolist() == [13.0, 2.0, 4.0]
    assert mt.scatter_reduce(x, 0, index, src, 'mean', include_self=False).tolist() == [6.0, 2.0, 1.0]
    assert x.scatter_reduce(0, index, src, 'amax').tolist() == [7.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"reduce must be 'sum', 'mean', 'amax' or 'amin'.*prod is not offered"):
        mt.scatter_reduce(x, 0, index, src, 'prod')
