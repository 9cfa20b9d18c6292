"""What a learner types in the debugger: t.norm(), float(t), repr(t), t.grad, help(mt.Tensor)."""
import inspect
import math
import pydoc
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import microtensor as mt
import transformer
from microtensor import nn, optim
from strategies import assert_forward, devices, distinct_tensors, nonscalar_shapes

INF = math.inf
VECTOR_ORDS = [None, 2, 1, INF, -INF, 3, 0.5, 'fro']
MATRIX_ORDS = [None, 'fro', 1, -1, INF, -INF]


def numpy_ord(ord):
    return None if ord == 'fro' else ord  # numpy refuses 'fro' for vectors; it is the 2-norm


# ---------------------------------------------------------------------------- norm
@devices
@pytest.mark.parametrize('ord', VECTOR_ORDS, ids=str)
@given(data=st.data(), keepdims=st.booleans())
def test_vector_norms_match_numpy_and_gradcheck(device, ord, data, keepdims):
    # offset 0.25: the magnitudes |x| are distinct too (no ties for inf), and none is near 0 (abs)
    x = data.draw(distinct_tensors(shape=data.draw(nonscalar_shapes), device=device, offset=0.25, gap=0.5))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    expected = np.linalg.norm(x.numpy(), numpy_ord(ord), axis=axis, keepdims=keepdims)
    assert_forward(x.norm(ord, axis=axis, keepdims=keepdims), expected)
    assert mt.gradcheck(lambda t: t.norm(ord, axis=axis, keepdims=keepdims), [x])


@devices
@pytest.mark.parametrize('ord', MATRIX_ORDS, ids=str)
@given(data=st.data(), keepdims=st.booleans())
def test_matrix_norms_match_numpy_and_gradcheck(device, ord, data, keepdims):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple))
    x = data.draw(distinct_tensors(shape=shape, device=device, offset=0.25, gap=0.5))  # distinct |x|, none near 0
    axis = tuple(data.draw(st.permutations(range(x.ndim)))[:2]) if x.ndim == 3 else None
    assume(sums_apart(x.numpy(), ord, axis))
    expected = np.linalg.norm(x.numpy(), ord, axis=axis, keepdims=keepdims)
    assert_forward(x.norm(ord=ord, axis=axis, keepdims=keepdims), expected)  # ord=: numpy's (torch.linalg's) norms
    assert mt.gradcheck(lambda t: t.norm(ord=ord, axis=axis, keepdims=keepdims), [x])


def sums_apart(a, ord, axis):
    """No finite difference of a matrix norm crosses a kink: the column (ord +-1) or row
    (ord +-inf) sums of |x| that max/min pick from are not near a tie."""
    if ord in (None, 'fro'):
        return True
    rows, columns = axis or (0, 1)
    summed, picked = (rows, columns) if ord in (1, -1) else (columns, rows)
    sums = np.sort(np.abs(a).sum(axis=summed, keepdims=True), axis=picked)
    return sums.shape[picked] == 1 or np.diff(sums, axis=picked).min() > 1e-3


@given(data=st.data())
def test_norm_of_everything_and_second_derivatives(data):
    x = data.draw(distinct_tensors(gap=0.5))  # any shape, scalars too
    assert_forward(x.norm(), np.linalg.norm(x.numpy().ravel()))
    assert mt.gradgradcheck(lambda t: t.norm(), [x])
    if x.ndim:
        assert mt.gradgradcheck(lambda t: t.norm(3, axis=-1), [x])


@pytest.mark.parametrize('ord', VECTOR_ORDS + [0, -1.5], ids=str)
def test_gradient_at_zero_is_zero_not_nan(ord):
    """As PyTorch: a norm has no derivative at 0, and its gradient there is taken as 0."""
    x = mt.tensor([[0.0, 0.0, 0.0], [3.0, -4.0, 1.0]], dtype='float64', requires_grad=True)
    x.norm(ord, axis=1).sum().backward()
    assert (x.grad.numpy()[0] == 0).all()
    if ord in (None, 2, 'fro'):  # the other row is untouched: x / |x|
        np.testing.assert_allclose(x.grad.numpy()[1], np.array([3.0, -4.0, 1.0]) / math.sqrt(26))


@pytest.mark.parametrize('ord', MATRIX_ORDS, ids=str)
def test_matrix_gradient_at_zero_is_zero(ord):
    x = mt.zeros(3, 2, requires_grad=True)
    x.norm(ord=ord).backward()
    assert (x.grad.numpy() == 0).all()


def test_ties_share_the_gradient_as_max_does():
    x = mt.tensor([-2.0, 2.0, 1.0], dtype='float64', requires_grad=True)
    x.norm(INF).backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.5, 0.5, 0.0])


@pytest.mark.parametrize('call, error, match', [
    (lambda x: x.norm(ord=2, axis=(0, 1)), ValueError, 'singular values'),
    (lambda x: x.norm('nuc'), ValueError, 'singular values'),
    (lambda x: x.norm(ord='nuc', axis=0), ValueError, 'not a vector norm'),
    (lambda x: x.reshape(1, 2, 3).norm(ord=1), ValueError, 'axis='),
    (lambda x: x.norm(ord=1, axis=(0, 0)), ValueError, 'two different axes'),
    (lambda x: x.norm(ord=1, axis=(0, 1, 1)), ValueError, 'two different axes'),
    (lambda x: x.norm(axis=(0, 0)), ValueError, 'names an axis twice'),
    (lambda x: x.norm(1, ord=1), TypeError, "p is PyTorch's vector norm, ord numpy's"),
    (lambda x: x.norm(axis=2), IndexError, r'axis 2 .* shape \(2, 3\)'),
    (lambda x: x.argmax(axis=0).norm(), TypeError, 'floating-point'),
])
def test_unsupported_norms_say_what_to_do(call, error, match):
    with pytest.raises(error, match=match):
        call(mt.randn(2, 3, requires_grad=True))


@given(data=st.data(), keepdim=st.booleans())
def test_p_norms_are_vector_norms_over_the_dims_as_pytorch(data, keepdim):
    """x.norm(p, dim): (sum |x|^p)^(1/p) over the elements of dim, whatever their shape (numpy's
    norm(x, 1) of a matrix is its largest column sum instead: that is x.norm(ord=1))."""
    x = data.draw(distinct_tensors(offset=0.25, gap=0.5))
    p = data.draw(st.sampled_from([2, 1, 3, INF, -INF, 'fro']))
    dim = data.draw(st.sampled_from([None] + [tuple(range(x.ndim))[k:] for k in range(x.ndim)]))
    flat = np.moveaxis(x.numpy(), dim or (), range(-len(dim or ()), 0)).reshape(
        x.shape[:x.ndim - len(dim)] + (-1,)) if dim else x.numpy().reshape(-1)
    expected = np.linalg.norm(flat, None if p == 'fro' else p, axis=-1)
    if keepdim:
        expected = np.reshape(expected, [1 if dim is None or i in dim else n for i, n in enumerate(x.shape)])
    assert_forward(x.norm(p, dim, keepdim), expected)
    assert mt.gradcheck(lambda t: t.norm(p, dim, keepdim), [x])


# ---------------------------------------------------------------------------- numbers and repr
def test_float_and_int_of_one_element_tensors():
    assert float(mt.tensor([[2.5]])) == 2.5 and isinstance(float(mt.tensor(2.5)), float)
    assert int(mt.tensor(2.7)) == 2 and int(mt.tensor(-2.7)) == -2  # truncated, as int(2.7)
    assert int(mt.tensor([7])) == 7
    y = (mt.randn(3, requires_grad=True) ** 2).sum()
    assert float(y) == pytest.approx(y.item())
    assert math.isclose(float(y.norm()), abs(y.item()), rel_tol=1e-6)
    for convert in (float, int):
        with pytest.raises(ValueError, match=rf"{convert.__name__}\(\): only a one-element tensor .* \(2, 2\)"):
            convert(mt.ones(2, 2))


def test_small_tensors_show_values_big_ones_a_summary():
    small = mt.tensor([[1.0, 2.0]], requires_grad=True, name='x')
    assert repr(small) == "tensor([[1. 2.]], name='x', requires_grad=True)"
    big = mt.ones(20, 20) * mt.full((20, 20), 2.0, requires_grad=True)
    assert repr(big) == "tensor(shape=(20, 20), dtype=float32, device='cpu', |x|=40, creator=Mul)"
    assert len(repr(mt.randn(64, 64, dtype='float64'))) < 100
    assert 'dtype=float64' in repr(mt.randn(64, 64, dtype='float64'))
    assert "|x|=" in repr(mt.arange(200))  # integers too


# ---------------------------------------------------------------------------- .grad of a non-leaf
def test_grad_of_a_non_leaf_warns_once_and_names_retain_grad():
    x = mt.randn(3, requires_grad=True)
    h = x * 2
    (h * h).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('default')
        values = [h.grad for _ in range(3)]  # one line of code: one warning
    assert values == [None] * 3
    assert len(caught) == 1 and 'retain_grad()' in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the line that read .grad


def test_leaves_and_retained_tensors_do_not_warn():
    x = mt.randn(3, requires_grad=True)
    constant = mt.randn(3)
    h = (x * 2).retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert x.grad is None and h.grad is None and constant.grad is None
        (h * h).sum().backward()
        np.testing.assert_allclose(h.grad.numpy(), 2 * h.numpy(), rtol=1e-6)
        assert x.grad is not None
        h.grad = None  # set by the user: no warning either
        assert h.grad is None


def test_missing_attributes_are_still_attribute_errors():
    t = mt.randn(2)
    assert not hasattr(t, 'gard')
    with pytest.raises(AttributeError, match="no attribute 'shap'"):
        t.shap


# ---------------------------------------------------------------------------- help()
def public_methods(cls):
    """(name, member) of every public method and property a class offers, inherited ones too."""
    for name in dir(cls):
        if name.startswith('_'):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def documented_classes():
    classes = [mt.Tensor, nn.Module]
    classes += [c for c in vars(optim).values() if inspect.isclass(c)]
    classes += [c for name, c in vars(transformer).items() if inspect.isclass(c) and not name.startswith('_')]
    return classes


@pytest.mark.parametrize('cls', documented_classes(), ids=lambda c: c.__name__)
def test_every_public_method_has_a_docstring(cls):
    """What help() shows: an override without its own docstring inherits its base method's."""
    undocumented = []
    for name, member in public_methods(cls):
        doc = member.__doc__ if isinstance(member, property) else inspect.getdoc(getattr(cls, name))
        if not (doc and doc.strip()):
            undocumented.append(name)
    assert undocumented == [], f"{cls.__name__}: no docstring on {undocumented}"


def test_help_of_tensor_explains_it_and_leaks_no_comments():
    text = pydoc.render_doc(mt.Tensor, renderer=pydoc.plaintext)
    doc = inspect.getdoc(mt.Tensor)
    for words in ('grad', 'creator', 'requires_grad', 'backward_loop', 'microtensor/ops/', 'retain_grad'):
        assert words in doc
    assert '# ---' not in text and '# comparisons' not in text  # comments above undocumented methods
    assert 'self + other' in pydoc.getdoc(mt.Tensor.__add__)
